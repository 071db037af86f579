// See case_names.hpp.
#include "case_names.hpp"

#include <cctype>
#include <cstring>

namespace cml::test::isolation {

std::string escape_spec(const std::string& name) {
  std::string out;
  out.reserve(name.size() * 2);
  for (char c : name) {
    if (std::strchr("\\,[]\"~*", c) != nullptr && c != '\0') out += '\\';
    out += c;
  }
  return out;
}

namespace {
// The number at `text[pos]`, if a digit run starts there and `end` (if given) follows it.
std::optional<int> number_at(const std::string& text, std::size_t pos, char end) {
  std::size_t i = pos;
  int value = 0;
  while (i < text.size() && std::isdigit(static_cast<unsigned char>(text[i])) && i - pos < 6)
    value = value * 10 + (text[i++] - '0');
  if (i == pos) return std::nullopt;
  if (end != '\0' && (i >= text.size() || text[i] != end)) return std::nullopt;
  return value;
}

std::string lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}
}  // namespace

std::optional<int> step_of(const std::string& tags, const std::string& name) {
  const std::string t = lower(tags);
  for (std::size_t at = t.find("[step"); at != std::string::npos; at = t.find("[step", at + 1))
    if (auto k = number_at(t, at + 5, ']')) return k;
  const std::string n = lower(name);
  std::size_t i = 0;
  while (i < n.size() && std::isspace(static_cast<unsigned char>(n[i]))) ++i;
  if (n.compare(i, 4, "step") != 0) return std::nullopt;
  i += 4;
  while (i < n.size() && n[i] == ' ') ++i;
  return number_at(n, i, '\0');
}

}  // namespace cml::test::isolation
