// Command-line parsing: see cml/cli.hpp.
#include "cml/cli.hpp"

#include "cml/errors.hpp"

#include <cctype>
#include <cstdio>
#include <limits>
#include <sstream>
#include <stdexcept>

namespace cml {

namespace {
std::string quoted(std::string_view s) { return "'" + std::string(s) + "'"; }

std::string lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}
}  // namespace

std::uint64_t parse_size(std::string_view text, std::string_view what) {
  const auto bad = [&](const std::string& why) {
    return UsageError(std::string(what) + ": " + quoted(text) + " " + why +
                      " (use a whole number of bytes, or K, M, G, T: 64M = 64 MiB)");
  };
  std::size_t i = 0;
  std::uint64_t value = 0;
  while (i < text.size() && std::isdigit(static_cast<unsigned char>(text[i]))) {
    const std::uint64_t digit = static_cast<std::uint64_t>(text[i] - '0');
    if (value > (std::numeric_limits<std::uint64_t>::max() - digit) / 10) throw bad("is too large");
    value = value * 10 + digit;
    ++i;
  }
  if (i == 0) throw bad("is not a size");
  const std::string unit = lower(text.substr(i));
  unsigned shift = 0;
  if (unit.empty() || unit == "b") shift = 0;
  else if (unit == "k" || unit == "kib") shift = 10;
  else if (unit == "m" || unit == "mib") shift = 20;
  else if (unit == "g" || unit == "gib") shift = 30;
  else if (unit == "t" || unit == "tib") shift = 40;
  else throw bad("has an unknown unit");
  if (shift > 0 && value > (std::numeric_limits<std::uint64_t>::max() >> shift)) throw bad("is too large");
  return value << shift;
}

std::int64_t parse_int(std::string_view text, std::int64_t lo, std::int64_t hi, std::string_view what) {
  std::size_t i = 0;
  bool negative = false;
  if (i < text.size() && (text[i] == '-' || text[i] == '+')) negative = text[i++] == '-';
  if (i == text.size()) throw UsageError(std::string(what) + ": " + quoted(text) + " is not a whole number");
  std::int64_t value = 0;
  for (; i < text.size(); ++i) {
    if (!std::isdigit(static_cast<unsigned char>(text[i])))
      throw UsageError(std::string(what) + ": " + quoted(text) + " is not a whole number");
    const int digit = text[i] - '0';
    if (value > (std::numeric_limits<std::int64_t>::max() - digit) / 10)
      throw UsageError(std::string(what) + ": " + quoted(text) + " is too large");
    value = value * 10 + digit;
  }
  if (negative) value = -value;
  if (value < lo || value > hi)
    throw UsageError(std::string(what) + ": " + std::to_string(value) + " is out of range [" +
                     std::to_string(lo) + ", " + std::to_string(hi) + "]");
  return value;
}

std::string format_bytes(std::uint64_t bytes) {
  static const char* const units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  int u = 0;
  while (u < 4 && bytes >= 1024 && bytes % 1024 == 0) { bytes /= 1024; ++u; }
  if (bytes >= 1024 * 10 && u < 4) {  // not a whole number of the next unit: one decimal
    std::ostringstream os;
    os.precision(1);
    os << std::fixed << static_cast<double>(bytes) / 1024.0 << ' ' << units[u + 1];
    return os.str();
  }
  return std::to_string(bytes) + " " + units[u];
}

Cli::Cli(std::string program, std::string summary)
    : program_(std::move(program)), summary_(std::move(summary)) {
  flag("help", "show this help and exit");
  integer("device", 0, 0, 63, "CUDA device to run on");
  integer("iters", 10, 1, 100000, "timed repetitions per measurement (the median is reported)");
  integer("warmup", 2, 0, 1000, "untimed runs before timing");
  flag("csv", "print results as CSV on stdout");
  flag("verbose", "print more detail");
  text("out", "", "also write each table as a CSV file into this folder");
}

Cli chapter_cli(const std::string& num, const std::string& summary) {
  return Cli("ch" + num, summary + "\nRun it with ./lab run " + num + " [-- options]; check your steps with ./lab check " +
                             num + ".");
}

Cli& Cli::add(const std::string& key, Option opt) {
  if (options_.count(key) == 0) order_.push_back(key);
  options_[key] = std::move(opt);
  return *this;
}

Cli& Cli::size(const std::string& key, std::uint64_t def, std::uint64_t lo, std::uint64_t hi,
               const std::string& help) {
  Option o{Kind::Size, help};
  o.size_lo = lo;
  o.size_hi = hi;
  o.value = std::to_string(def);
  return add(key, o);
}

Cli& Cli::integer(const std::string& key, std::int64_t def, std::int64_t lo, std::int64_t hi,
                  const std::string& help) {
  Option o{Kind::Integer, help};
  o.lo = lo;
  o.hi = hi;
  o.value = std::to_string(def);
  return add(key, o);
}

Cli& Cli::choice(const std::string& key, const std::string& def,
                 const std::vector<std::string>& choices, const std::string& help) {
  Option o{Kind::Choice, help};
  o.choices = choices;
  o.value = def;
  return add(key, o);
}

Cli& Cli::flag(const std::string& key, const std::string& help) {
  Option o{Kind::Flag, help};
  o.value = "false";
  return add(key, o);
}

Cli& Cli::text(const std::string& key, const std::string& def, const std::string& help) {
  Option o{Kind::Text, help};
  o.value = def;
  return add(key, o);
}

bool Cli::parse(int argc, const char* const* argv) {
  for (int a = 1; a < argc; ++a) {
    std::string arg = argv[a];
    if (arg == "-h") arg = "--help";
    if (arg.rfind("--", 0) != 0 || arg.size() == 2)
      throw UsageError("unexpected argument " + quoted(arg) + " (options look like --key=value; see --help)");
    std::string key = arg.substr(2), value;
    bool has_value = false;
    if (const auto eq = key.find('='); eq != std::string::npos) {
      value = key.substr(eq + 1);
      key = key.substr(0, eq);
      has_value = true;
    }
    auto it = options_.find(key);
    if (it == options_.end()) throw UsageError("unknown option --" + key + " (see --help)");
    Option& o = it->second;
    o.given = true;
    if (o.kind == Kind::Flag) {
      if (!has_value) value = "true";
      const std::string v = lower(value);
      if (v == "true" || v == "1" || v == "yes") o.value = "true";
      else if (v == "false" || v == "0" || v == "no") o.value = "false";
      else throw UsageError("--" + key + " takes no value, or true/false; got " + quoted(value));
      continue;
    }
    if (!has_value) {
      if (a + 1 >= argc) throw UsageError("--" + key + " needs a value");
      value = argv[++a];
    }
    const std::string what = "--" + key;
    switch (o.kind) {
      case Kind::Size: {
        const std::uint64_t v = parse_size(value, what);
        if (v < o.size_lo || v > o.size_hi)
          throw UsageError(what + ": " + format_bytes(v) + " is out of range [" +
                           format_bytes(o.size_lo) + ", " + format_bytes(o.size_hi) + "]");
        o.value = std::to_string(v);
        break;
      }
      case Kind::Integer:
        o.value = std::to_string(parse_int(value, o.lo, o.hi, what));
        break;
      case Kind::Choice: {
        bool known = false;
        for (const auto& c : o.choices) known = known || c == value;
        if (!known) {
          std::string list;
          for (const auto& c : o.choices) list += (list.empty() ? "" : "|") + c;
          throw UsageError(what + ": " + quoted(value) + " is not one of " + list);
        }
        o.value = value;
        break;
      }
      case Kind::Text:
        if (value.empty()) throw UsageError(what + " needs a value");
        o.value = value;
        break;
      case Kind::Flag:
        break;
    }
  }
  if (get_flag("help")) {
    std::fputs(usage().c_str(), stdout);
    return false;
  }
  return true;
}

const Cli::Option& Cli::find(const std::string& key, Kind kind) const {
  auto it = options_.find(key);
  if (it == options_.end() || it->second.kind != kind)
    throw std::logic_error("Cli: option --" + key + " is not registered with that type");
  return it->second;
}

bool Cli::given(const std::string& key) const {
  auto it = options_.find(key);
  if (it == options_.end()) throw std::logic_error("Cli: option --" + key + " is not registered");
  return it->second.given;
}

std::uint64_t Cli::get_size(const std::string& key) const {
  return std::stoull(find(key, Kind::Size).value);
}
std::int64_t Cli::get_int(const std::string& key) const {
  return std::stoll(find(key, Kind::Integer).value);
}
const std::string& Cli::get_choice(const std::string& key) const {
  return find(key, Kind::Choice).value;
}
bool Cli::get_flag(const std::string& key) const { return find(key, Kind::Flag).value == "true"; }
const std::string& Cli::get_text(const std::string& key) const { return find(key, Kind::Text).value; }

std::string Cli::usage() const {
  std::ostringstream os;
  os << summary_ << "\n\nusage: " << program_ << " [options]\n\noptions:\n";
  for (const auto& key : order_) {
    const Option& o = options_.at(key);
    std::string left = "  --" + key;
    switch (o.kind) {
      case Kind::Size: left += "=SIZE"; break;
      case Kind::Integer: left += "=N"; break;
      case Kind::Choice: {
        std::string list;
        for (const auto& c : o.choices) list += (list.empty() ? "" : "|") + c;
        left += "=" + list;
        break;
      }
      case Kind::Text: left += "=" + std::string(key == "out" ? "DIR" : "TEXT"); break;
      case Kind::Flag: break;
    }
    os << left;
    os << std::string(left.size() < 30 ? 30 - left.size() : 1, ' ') << o.help;
    if (o.kind == Kind::Size) os << " (default " << format_bytes(std::stoull(o.value)) << ")";
    else if (o.kind != Kind::Flag && !o.value.empty()) os << " (default " << o.value << ")";
    os << "\n";
  }
  os << "\nexit codes: 0 passed, 1 wrong result or error, 2 usage error, 77 skipped (no GPU or feature)\n";
  return os.str();
}

}  // namespace cml
