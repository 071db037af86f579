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
  // 1.5G, 1e99: a fraction or an exponent, not a unit.
  if (!unit.empty() && (unit[0] == '.' || unit[0] == ',' ||
                        (unit[0] == 'e' && unit.size() > 1 &&
                         (std::isdigit(static_cast<unsigned char>(unit[1])) || unit[1] == '+' || unit[1] == '-'))))
    throw bad("is not a whole number (no fractions or exponents)");
  unsigned shift = 0;
  if (unit.empty() || unit == "b")
    shift = 0;
  else if (unit == "k" || unit == "kib")
    shift = 10;
  else if (unit == "m" || unit == "mib")
    shift = 20;
  else if (unit == "g" || unit == "gib")
    shift = 30;
  else if (unit == "t" || unit == "tib")
    shift = 40;
  else
    throw bad("has an unknown unit");
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
    throw UsageError(std::string(what) + ": " + std::to_string(value) + " is out of range [" + std::to_string(lo) +
                     ", " + std::to_string(hi) + "]");
  return value;
}

std::string format_bytes(std::uint64_t bytes) {
  static const char* const units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  int u = 0;
  while (u < 4 && bytes >= 1024 && bytes % 1024 == 0) {
    bytes /= 1024;
    ++u;
  }
  if (bytes < 1024 * 10 || u == 4) return std::to_string(bytes) + " " + units[u];
  // Not a whole number of a larger unit: the largest unit it reaches, with one decimal.
  double value = static_cast<double>(bytes);
  while (u < 4 && value >= 1024) {
    value /= 1024;
    ++u;
  }
  std::ostringstream os;
  os.precision(1);
  os << std::fixed << value << ' ' << units[u];
  return os.str();
}

Cli::Cli(std::string program, std::string summary) : program_(std::move(program)), summary_(std::move(summary)) {
  // The keys every program shares are read back through the accessors, not bound: a Cli
  // is returned by value from chapter_cli, so it cannot bind fields of its own.
  const auto flag_option = [this](const std::string& key, const std::string& help) {
    Option o{Kind::Flag, help};
    o.value = "false";
    add(key, o);
  };
  flag_option("help", "show this help and exit");
  add_integer("device", 0, 0, 63, "CUDA device to run on", {});
  add_integer("iters", 10, 1, 100000, "timed repetitions per measurement (the median is reported)", {});
  add_integer("warmup", 2, 0, 1000, "untimed runs before timing", {});
  flag_option("csv", "print results as CSV on stdout");
  flag_option("verbose", "print more detail");
  Option out{Kind::Text, "also write each table as a CSV file into this folder"};
  add("out", out);
}

Cli chapter_cli(const std::string& num, const std::string& summary) {
  return Cli("ch" + num, summary + "\nRun it with ./lab run " + num +
                             " [-- options]; check your steps with ./lab check " + num + ".");
}

Cli& Cli::add(const std::string& key, Option opt) {
  if (options_.count(key) != 0) throw std::logic_error("Cli: option --" + key + " is registered twice");
  order_.push_back(key);
  options_[key] = std::move(opt);
  return *this;
}

Cli& Cli::size(const std::string& key, std::uint64_t& field, std::uint64_t lo, std::uint64_t hi,
               const std::string& help) {
  Option o{Kind::Size, help};
  o.size_lo = lo;
  o.size_hi = hi;
  o.value = std::to_string(field);
  o.store = [&field](const std::string& v) { field = std::stoull(v); };
  return add(key, o);
}

Cli& Cli::add_integer(const std::string& key, std::int64_t def, std::int64_t lo, std::int64_t hi,
                      const std::string& help, std::function<void(const std::string&)> store) {
  Option o{Kind::Integer, help};
  o.lo = lo;
  o.hi = hi;
  o.value = std::to_string(def);
  o.store = std::move(store);
  return add(key, o);
}

Cli& Cli::integer(const std::string& key, int& field, std::int64_t lo, std::int64_t hi, const std::string& help) {
  if (lo < std::numeric_limits<int>::min() || hi > std::numeric_limits<int>::max())
    throw std::logic_error("Cli: the range of --" + key + " does not fit an int");
  return add_integer(key, field, lo, hi, help, [&field](const std::string& v) { field = std::stoi(v); });
}

Cli& Cli::integer(const std::string& key, std::size_t& field, std::int64_t lo, std::int64_t hi,
                  const std::string& help) {
  if (lo < 0) throw std::logic_error("Cli: --" + key + " is a count and cannot be negative");
  return add_integer(key, static_cast<std::int64_t>(field), lo, hi, help,
                     [&field](const std::string& v) { field = static_cast<std::size_t>(std::stoull(v)); });
}

Cli& Cli::choice(const std::string& key, std::string& field, const std::vector<std::string>& choices,
                 const std::string& help) {
  Option o{Kind::Choice, help};
  o.choices = choices;
  o.value = field;
  o.store = [&field](const std::string& v) { field = v; };
  return add(key, o);
}

Cli& Cli::flag(const std::string& key, bool& field, const std::string& help) {
  Option o{Kind::Flag, help};
  o.value = field ? "true" : "false";
  o.store = [&field](const std::string& v) { field = v == "true"; };
  return add(key, o);
}

Cli& Cli::text(const std::string& key, std::string& field, const std::string& help) {
  Option o{Kind::Text, help};
  o.value = field;
  o.store = [&field](const std::string& v) { field = v; };
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
    // A key given twice is a mistake either way: which one did the user mean?
    if (o.given) throw UsageError("--" + key + " is given twice (give it once)");
    o.given = true;
    if (o.kind == Kind::Flag) {
      if (has_value)
        throw UsageError("--" + key + " takes no value; got " + quoted(value) + " (write --" + key + " alone)");
      o.value = "true";
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
          throw UsageError(what + ": " + format_bytes(v) + " is out of range [" + format_bytes(o.size_lo) + ", " +
                           format_bytes(o.size_hi) + "]");
        o.value = std::to_string(v);
        break;
      }
      case Kind::Integer: o.value = std::to_string(parse_int(value, o.lo, o.hi, what)); break;
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
      case Kind::Flag: break;
    }
  }
  if (get_flag("help")) {
    std::fputs(usage().c_str(), stdout);
    return false;
  }
  for (const auto& [key, o] : options_)
    if (o.store) o.store(o.value);
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

std::uint64_t Cli::get_size(const std::string& key) const { return std::stoull(find(key, Kind::Size).value); }
std::int64_t Cli::get_int(const std::string& key) const { return std::stoll(find(key, Kind::Integer).value); }
const std::string& Cli::get_choice(const std::string& key) const { return find(key, Kind::Choice).value; }
bool Cli::get_flag(const std::string& key) const { return find(key, Kind::Flag).value == "true"; }
const std::string& Cli::get_text(const std::string& key) const { return find(key, Kind::Text).value; }

namespace {
constexpr std::size_t kHelpWidth = 100;  // columns of --help
constexpr std::size_t kHelpIndent = 30;  // where an option's help text starts

// Appends `text` to `os` word by word from column `column`, wrapping at kHelpWidth with
// continuation lines indented to `indent`; explicit newlines in `text` are kept.
void wrap_into(std::ostringstream& os, const std::string& text, std::size_t column, std::size_t indent) {
  std::istringstream lines(text);
  std::string line;
  bool first_line = true;
  while (std::getline(lines, line)) {
    if (!first_line) {
      os << "\n" << std::string(indent, ' ');
      column = indent;
    }
    first_line = false;
    std::istringstream words(line);
    std::string word;
    bool first_word = true;
    while (words >> word) {
      const std::size_t need = word.size() + (first_word ? 0 : 1);
      if (!first_word && column + need > kHelpWidth) {
        os << "\n" << std::string(indent, ' ');
        column = indent;
      } else if (!first_word) {
        os << ' ';
        ++column;
      }
      os << word;
      column += word.size();
      first_word = false;
    }
  }
}
}  // namespace

std::string Cli::usage() const {
  std::ostringstream os;
  os << summary_ << "\n\nusage: " << program_ << " [options]\n\noptions:\n";
  for (const auto& key : order_) {
    const Option& o = options_.at(key);
    std::string left = "  --" + key;
    switch (o.kind) {
      case Kind::Size: left += "=SIZE"; break;
      case Kind::Integer: left += "=N"; break;
      case Kind::Choice: break;  // below: a short list stays here, a long one goes into the help
      case Kind::Text: left += "=" + std::string(key == "out" ? "DIR" : "TEXT"); break;
      case Kind::Flag: break;
    }
    std::string help = o.help;
    if (o.kind == Kind::Choice) {
      std::string list;
      for (const auto& c : o.choices) list += (list.empty() ? "" : "|") + c;
      if (left.size() + 1 + list.size() < kHelpIndent) {
        left += "=" + list;
      } else {
        left += "=NAME";
        std::string names;
        for (const auto& c : o.choices) names += (names.empty() ? "" : ", ") + c;
        help += "; NAME is one of " + names;
      }
    }
    if (o.kind == Kind::Size)
      help += " (default " + format_bytes(std::stoull(o.value)) + ")";
    else if (o.kind != Kind::Flag && !o.value.empty())
      help += " (default " + o.value + ")";
    if (left.size() + 1 > kHelpIndent) {  // a long key: its help starts on the next line
      os << left << "\n" << std::string(kHelpIndent, ' ');
    } else {
      os << left << std::string(kHelpIndent - left.size(), ' ');
    }
    wrap_into(os, help, kHelpIndent, kHelpIndent);
    os << "\n";
  }
  os << "\nexit codes: 0 passed, 1 wrong result or error, 2 usage error, 77 skipped (no GPU or feature)\n";
  return os.str();
}

}  // namespace cml
