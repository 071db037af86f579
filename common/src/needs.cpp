// See cml/needs.hpp.
#include "cml/needs.hpp"

#include "cml/errors.hpp"

#include <sstream>
#include <stdexcept>

namespace cml::needs {

extern const char* const kCourseText;  // needs.txt, compiled in (needs_text.cpp.in)

namespace {

bool is_flag(const std::string& key) {
  return key == "map_host_memory" || key == "managed_memory" || key == "concurrent_managed_access";
}

bool is_count(const std::string& key) {
  return key == "copy_engines" || key == "shared_per_block" || key == "threads_per_sm" || key == "gpus";
}

int whole_number(const std::string& text, const std::string& spec) {
  std::size_t used = 0;
  int v = -1;
  try {
    v = std::stoi(text, &used);
  } catch (const std::exception&) {
  }
  if (used != text.size() || v < 0) throw std::invalid_argument("'" + spec + "': '" + text + "' is not a whole number");
  return v;
}

// The part of a step range "K" or "K-L"; * is 0..0.
void parse_steps(const std::string& text, Entry& e) {
  if (text == "*") return;
  const std::size_t dash = text.find('-');
  e.first_step = whole_number(text.substr(0, dash), text);
  e.last_step = dash == std::string::npos ? e.first_step : whole_number(text.substr(dash + 1), text);
  if (e.first_step < 1 || e.last_step < e.first_step) throw std::invalid_argument("'" + text + "' is no step range");
}

}  // namespace

Need parse_need(const std::string& spec, const std::string& what) {
  Need n;
  n.what = what;
  const std::size_t eq = spec.find('=');
  n.key = spec.substr(0, eq);
  const std::string value = eq == std::string::npos ? "" : spec.substr(eq + 1);
  if (n.key == "cc") {
    const std::size_t dot = value.find('.');
    if (dot == std::string::npos) throw std::invalid_argument("'" + spec + "': write the compute capability as M.m");
    n.value = whole_number(value.substr(0, dot), spec) * 10 + whole_number(value.substr(dot + 1), spec);
  } else if (is_flag(n.key)) {
    if (!value.empty()) throw std::invalid_argument("'" + spec + "': " + n.key + " takes no value");
  } else if (is_count(n.key)) {
    n.value = whole_number(value, spec);
    if (n.key == "shared_per_block") n.value *= 1024;  // written in KiB
  } else {
    throw std::invalid_argument("'" + spec + "': no need is called " + n.key);
  }
  return n;
}

std::vector<Entry> parse(const std::string& text) {
  std::vector<Entry> out;
  std::istringstream in(text);
  std::string line;
  for (int number = 1; std::getline(in, line); ++number) {
    std::istringstream words(line);
    std::string chapter, steps, spec;
    if (!(words >> chapter) || chapter[0] == '#') continue;
    try {
      if (!(words >> steps >> spec)) throw std::invalid_argument("want: chapter steps need what-it-is-for");
      std::string what;
      std::getline(words >> std::ws, what);
      if (what.empty()) throw std::invalid_argument("say what the need is for");
      Entry e;
      e.chapter = chapter;
      parse_steps(steps, e);
      e.need = parse_need(spec, what);
      out.push_back(e);
    } catch (const std::invalid_argument& err) {
      throw std::invalid_argument("needs.txt line " + std::to_string(number) + ": " + err.what());
    }
  }
  return out;
}

const std::vector<Entry>& course() {
  static const std::vector<Entry> table = parse(kCourseText);
  return table;
}

std::string count_words(int n, const std::string& noun) {
  static const char* const kWords[] = {"no", "one", "two", "three", "four", "five", "six", "seven", "eight"};
  const std::string number = n >= 0 && n <= 8 ? kWords[n] : std::to_string(n);
  return number + " " + noun + (n == 1 ? "" : "s");
}

std::string describe(const Need& n) {
  if (n.key == "cc") return "compute capability " + std::to_string(n.value / 10) + "." + std::to_string(n.value % 10);
  if (n.key == "copy_engines") return std::to_string(n.value) + " copy engine" + (n.value == 1 ? "" : "s");
  if (n.key == "map_host_memory") return "mapped host memory (canMapHostMemory)";
  if (n.key == "managed_memory") return "managed memory (managedMemory)";
  if (n.key == "concurrent_managed_access") return "concurrent managed access (concurrentManagedAccess)";
  if (n.key == "shared_per_block") return std::to_string(n.value / 1024) + " KiB of shared memory per block";
  if (n.key == "threads_per_sm") return std::to_string(n.value) + " resident threads per SM";
  if (n.key == "gpus") return count_words(n.value, "GPU");
  return n.key;
}

namespace {
int have(const Need& n, const DeviceFacts& g) {
  if (n.key == "cc") return g.cc();
  if (n.key == "copy_engines") return g.async_engine_count;
  if (n.key == "map_host_memory") return g.can_map_host_memory ? 1 : 0;
  if (n.key == "managed_memory") return g.managed_memory ? 1 : 0;
  if (n.key == "concurrent_managed_access") return g.concurrent_managed_access ? 1 : 0;
  if (n.key == "shared_per_block") return g.shared_per_block_optin;
  if (n.key == "threads_per_sm") return g.threads_per_sm;
  if (n.key == "gpus") return g.device_count;
  return 0;
}

// What the GPU has instead, for the message: "Tesla T4 is 7.5", "... has 1", "... has none".
std::string instead(const Need& n, const DeviceFacts& g) {
  if (n.key == "cc") return g.name + " is " + std::to_string(g.cc_major) + "." + std::to_string(g.cc_minor);
  if (is_flag(n.key)) return g.name + " has none";
  if (n.key == "shared_per_block") return g.name + " has " + std::to_string(g.shared_per_block_optin / 1024) + " KiB";
  if (n.key == "gpus")
    return "this machine has " + (g.device_count == 1 ? std::string("one") : count_words(g.device_count, "GPU"));
  return g.name + " has " + std::to_string(have(n, g));
}
}  // namespace

bool met(const Need& n, const DeviceFacts& g) { return have(n, g) >= n.value; }

std::string missing(const Need& n, const DeviceFacts& g) {
  if (met(n, g)) return "";
  return n.what + ": needs " + describe(n) + "; " + instead(n, g);
}

std::vector<Need> of(const std::string& chapter, int step, const std::vector<Entry>& table) {
  std::vector<Need> out;
  for (const auto& e : table)
    if (e.chapter == chapter && (e.first_step == 0 || (step > 0 && e.covers(step)))) out.push_back(e.need);
  return out;
}

std::string missing_for(const std::string& chapter, int step, const DeviceFacts& g, const std::vector<Entry>& table) {
  for (const auto& n : of(chapter, step, table)) {
    const std::string why = missing(n, g);
    if (!why.empty()) return (step > 0 ? "step " + std::to_string(step) : "chapter " + chapter) + ": " + why;
  }
  return "";
}

void require(const std::string& chapter, int step, const DeviceFacts& g) {
  const std::string why = missing_for(chapter, step, g);
  if (!why.empty()) throw Skip(why);
}

int last_named_step(const std::string& chapter, const std::vector<Entry>& table) {
  int last = 0;
  for (const auto& e : table)
    if (e.chapter == chapter && e.last_step > last) last = e.last_step;
  return last;
}

}  // namespace cml::needs
