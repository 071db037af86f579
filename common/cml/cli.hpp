// The command line every program of the course shares: --key=value (or --key value),
// sizes like 64M (K, M, G, T are binary: 64M = 64 MiB), --help. Each program adds its own
// keys. A bad command line throws cml::UsageError with one line to show (exit 2); parsing
// happens before the GPU is touched, so a bad flag is exit 2 on any machine.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <string_view>
#include <vector>

namespace cml {

// "4096", "64K", "64KiB", "256M", "1G" -> bytes. Throws UsageError naming `what`.
std::uint64_t parse_size(std::string_view text, std::string_view what = "size");
// A whole number in [lo, hi]. Throws UsageError naming `what`.
std::int64_t parse_int(std::string_view text, std::int64_t lo, std::int64_t hi, std::string_view what = "value");
// 268435456 -> "256 MiB", 4096 -> "4 KiB", 1000 -> "1000 B".
std::string format_bytes(std::uint64_t bytes);

class Cli {
 public:
  // summary: what the program teaches and how to run it, shown at the top of --help.
  Cli(std::string program, std::string summary);

  // Keys every program has are registered here: --help, --device, --iters, --warmup,
  // --csv, --verbose, --out (read them with the accessors below, or through cml::Run).
  //
  // A program registers its own keys bound to the fields of its settings: the field's
  // value before parse() is the default shown by --help, and parse() writes the value
  // given on the command line into it. So a key, its default and its field are written
  // once, side by side, and settings are assigned by name, never by position:
  //   Settings s;                      // struct Settings { int cycles = -1; ... };
  //   cli.integer("cycles", s.cycles, -1, 1 << 20, "adds per element");
  // The fields must outlive parse(). Chainable.
  Cli& size(const std::string& key, std::uint64_t& field, std::uint64_t lo, std::uint64_t hi, const std::string& help);
  Cli& integer(const std::string& key, int& field, std::int64_t lo, std::int64_t hi, const std::string& help);
  Cli& integer(const std::string& key, std::size_t& field, std::int64_t lo, std::int64_t hi, const std::string& help);
  Cli& choice(const std::string& key, std::string& field, const std::vector<std::string>& choices,
              const std::string& help);
  Cli& flag(const std::string& key, bool& field, const std::string& help);
  Cli& text(const std::string& key, std::string& field, const std::string& help);

  // Parses argv. Returns false when --help was asked for (usage went to stdout; exit 0).
  // Throws UsageError for an unknown key, a key given twice, a value given to a flag, a
  // missing or bad value, a value out of range.
  bool parse(int argc, const char* const* argv);

  std::uint64_t get_size(const std::string& key) const;
  std::int64_t get_int(const std::string& key) const;
  const std::string& get_choice(const std::string& key) const;
  bool get_flag(const std::string& key) const;
  const std::string& get_text(const std::string& key) const;
  // Whether the command line set `key` (a default the program may adapt was not).
  bool given(const std::string& key) const;

  int device() const { return static_cast<int>(get_int("device")); }
  int iters() const { return static_cast<int>(get_int("iters")); }
  int warmup() const { return static_cast<int>(get_int("warmup")); }
  bool csv() const { return get_flag("csv"); }
  bool verbose() const { return get_flag("verbose"); }
  // --out=DIR: where a program writes its tables as CSV files (empty: nowhere).
  const std::string& out_dir() const { return get_text("out"); }

  // --help's text, wrapped at 100 columns.
  std::string usage() const;

 private:
  enum class Kind { Size, Integer, Choice, Flag, Text };
  struct Option {
    Option() = default;
    Option(Kind k, std::string h) : kind(k), help(std::move(h)) {}
    Kind kind = Kind::Flag;
    std::string help;
    std::int64_t lo = 0, hi = 0;                    // Integer
    std::uint64_t size_lo = 0, size_hi = 0;         // Size
    std::vector<std::string> choices;               // Choice
    std::string value;                              // the text, default or given
    bool given = false;                             // set on the command line
    std::function<void(const std::string&)> store;  // writes the parsed value into the bound field
  };
  Cli& add(const std::string& key, Option opt);
  Cli& add_integer(const std::string& key, std::int64_t def, std::int64_t lo, std::int64_t hi, const std::string& help,
                   std::function<void(const std::string&)> store);
  const Option& find(const std::string& key, Kind kind) const;

  std::string program_, summary_;
  std::vector<std::string> order_;  // keys in registration order, for --help
  std::map<std::string, Option> options_;
};

// The command line of chapter `num`'s program ("ch" + num): its summary, then how to run
// it and check the learner's steps with ./lab, at the top of --help.
Cli chapter_cli(const std::string& num, const std::string& summary);

}  // namespace cml
