// See junit_merge.hpp.
#include "junit_merge.hpp"

#include <cstdio>
#include <ctime>

namespace cml::test::junit {

namespace {
// Length of the valid UTF-8 sequence starting at text[i], or 0 if it is not one.
std::size_t utf8_length(std::string_view text, std::size_t i) {
  const auto byte = [&](std::size_t k) { return static_cast<unsigned char>(text[k]); };
  const unsigned char c = byte(i);
  std::size_t n = 0;
  if (c >= 0xC2 && c <= 0xDF)
    n = 2;
  else if (c >= 0xE0 && c <= 0xEF)
    n = 3;
  else if (c >= 0xF0 && c <= 0xF4)
    n = 4;
  else
    return 0;
  if (i + n > text.size()) return 0;
  for (std::size_t k = 1; k < n; ++k)
    if ((byte(i + k) & 0xC0) != 0x80) return 0;
  // Overlong forms and surrogates are invalid XML characters too.
  if (c == 0xE0 && byte(i + 1) < 0xA0) return 0;
  if (c == 0xED && byte(i + 1) > 0x9F) return 0;
  if (c == 0xF0 && byte(i + 1) < 0x90) return 0;
  if (c == 0xF4 && byte(i + 1) > 0x8F) return 0;
  return n;
}

// End (one past '>') of the tag starting at `open`, quotes respected: Catch2 writes '>'
// unescaped inside attribute values (a test named "a > b").
std::size_t tag_end(std::string_view text, std::size_t open) {
  char quote = '\0';
  for (std::size_t i = open + 1; i < text.size(); ++i) {
    const char c = text[i];
    if (quote != '\0') {
      if (c == quote) quote = '\0';
    } else if (c == '"' || c == '\'') {
      quote = c;
    } else if (c == '>') {
      return i + 1;
    }
  }
  return std::string_view::npos;
}

// Position of the element `<name` (followed by a space, '>' or '/') at or after `from`.
std::size_t find_element(std::string_view text, std::string_view name, std::size_t from) {
  const std::string open = "<" + std::string(name);
  for (std::size_t at = text.find(open, from); at != std::string_view::npos; at = text.find(open, at + 1)) {
    const std::size_t next = at + open.size();
    if (next < text.size() && (text[next] == ' ' || text[next] == '>' || text[next] == '/' || text[next] == '\n' ||
                               text[next] == '\t' || text[next] == '\r'))
      return at;
  }
  return std::string_view::npos;
}

std::size_t count_if(const std::vector<std::string>& cases, bool (*pred)(std::string_view)) {
  std::size_t n = 0;
  for (const auto& c : cases) n += pred(c) ? 1 : 0;
  return n;
}

std::string seconds_text(double s) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.3f", s < 0 ? 0.0 : s);
  return buf;
}
}  // namespace

std::string escape(std::string_view text) {
  std::string out;
  out.reserve(text.size() + text.size() / 8);
  for (std::size_t i = 0; i < text.size();) {
    const auto c = static_cast<unsigned char>(text[i]);
    if (c >= 0x80) {
      const std::size_t n = utf8_length(text, i);
      if (n == 0) {
        out += '?';
        ++i;
      } else {
        out.append(text.substr(i, n));
        i += n;
      }
      continue;
    }
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\t':
      case '\n': out += static_cast<char>(c); break;
      case '\r': break;  // CR LF -> LF; a lone CR only redraws a terminal line
      default: out += (c < 0x20 || c == 0x7F) ? '?' : static_cast<char>(c);
    }
    ++i;
  }
  return out;
}

std::vector<std::string> testcases(std::string_view report) {
  std::vector<std::string> out;
  std::size_t at = find_element(report, "testcase", 0);
  while (at != std::string_view::npos) {
    const std::size_t head = tag_end(report, at);
    if (head == std::string_view::npos) break;  // a truncated report: keep what was whole
    std::size_t end = head;
    if (report[head - 2] != '/') {
      const std::size_t close = report.find("</testcase>", head);
      if (close == std::string_view::npos) break;
      end = close + std::string_view("</testcase>").size();
    }
    out.emplace_back(report.substr(at, end - at));
    at = find_element(report, "testcase", end);
  }
  return out;
}

bool has_failure(std::string_view testcase) {
  return find_element(testcase, "failure", 0) != std::string_view::npos ||
         find_element(testcase, "error", 0) != std::string_view::npos;
}

bool has_skip(std::string_view testcase) { return find_element(testcase, "skipped", 0) != std::string_view::npos; }

std::string annotate_failure(std::string_view testcase, std::string_view note) {
  std::size_t at = find_element(testcase, "failure", 0);
  const std::size_t error = find_element(testcase, "error", 0);
  if (at == std::string_view::npos || (error != std::string_view::npos && error < at)) at = error;
  if (at == std::string_view::npos) return std::string(testcase);
  const std::size_t head = tag_end(testcase, at);
  if (head == std::string_view::npos) return std::string(testcase);
  std::string out(testcase.substr(0, head));
  if (testcase[head - 2] == '/') {  // <failure .../>: give it a text
    const bool failure = testcase.compare(at, 8, "<failure") == 0;
    out.erase(out.size() - 2);
    out += ">" + escape(note) + (failure ? "</failure>" : "</error>");
  } else {
    out += escape(note) + "\n";
  }
  out.append(testcase.substr(head));
  return out;
}

std::string failed_testcase(const std::string& suite, const std::string& name, double seconds,
                            const std::string& message, const std::string& details) {
  std::string out = "<testcase classname=\"" + escape(suite) + ".global\" name=\"" + escape(name) + "\" time=\"" +
                    seconds_text(seconds) + "\" status=\"run\">\n";
  out += "      <failure message=\"" + escape(message) + "\" type=\"isolation\">\n" + escape(message) +
         "\n      </failure>\n";
  if (!details.empty()) out += "      <system-out>\n" + escape(details) + "\n      </system-out>\n";
  out += "    </testcase>";
  return out;
}

std::string not_run_testcase(const std::string& suite, const std::string& name, const std::string& message) {
  return "<testcase classname=\"" + escape(suite) + ".global\" name=\"" + escape(name) +
         "\" time=\"0.000\" status=\"notrun\">\n      <skipped message=\"" + escape(message) + "\">\n" +
         escape(message) + "\n      </skipped>\n    </testcase>";
}

std::string document(const std::string& suite, const std::vector<std::string>& cases, double seconds) {
  char stamp[32] = "1970-01-01T00:00:00Z";
  const std::time_t now = std::time(nullptr);
  std::tm utc{};
  if (gmtime_r(&now, &utc) != nullptr) std::strftime(stamp, sizeof stamp, "%Y-%m-%dT%H:%M:%SZ", &utc);
  const auto failures =
      count_if(cases, [](std::string_view c) { return find_element(c, "failure", 0) != std::string_view::npos; });
  const auto errors = count_if(cases, [](std::string_view c) {
    return find_element(c, "failure", 0) == std::string_view::npos &&
           find_element(c, "error", 0) != std::string_view::npos;
  });
  const auto skipped = count_if(cases, has_skip);
  std::string out = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<testsuites>\n";
  out += "  <testsuite name=\"" + escape(suite) + "\" errors=\"" + std::to_string(errors) + "\" failures=\"" +
         std::to_string(failures) + "\" skipped=\"" + std::to_string(skipped) + "\" tests=\"" +
         std::to_string(cases.size()) + "\" hostname=\"tbd\" time=\"" + seconds_text(seconds) + "\" timestamp=\"" +
         stamp + "\">\n";
  out +=
      "    <properties>\n      <property name=\"isolation\" value=\"one process per test case\"/>\n"
      "    </properties>\n";
  for (const auto& c : cases) out += "    " + c + "\n";
  out += "  </testsuite>\n</testsuites>\n";
  return out;
}

}  // namespace cml::test::junit
