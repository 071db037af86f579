// See supervisor.hpp. Each child's stdout and stderr go to a log file that is shown after
// the case ends (so cases never interleave), and its report to a file of its own.
#include "supervisor.hpp"

#include "case_names.hpp"
#include "junit_merge.hpp"
#include "verdicts.hpp"
#include "watchdog.hpp"

#include "cml/exit_codes.hpp"

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <sstream>
#include <unistd.h>

extern char** environ;

namespace cml::test::isolation {

namespace fs = std::filesystem;

namespace {
// Options whose value follows them ("-d yes") and that the children should see too.
bool passed_on_with_value(const std::string& a) {
  for (const char* o : {"-c", "--section", "-d", "--durations", "--rng-seed", "-v", "--verbosity", "-w", "--warn",
                        "--use-colour", "--colour-mode", "-D", "--min-duration"})
    if (a == o) return true;
  return false;
}
bool passed_on_flag(const std::string& a) {
  for (const char* o : {"-s", "--success", "-e", "--nothrow", "--skip-benchmarks", "--benchmark-no-analysis"})
    if (a == o) return true;
  return false;
}
// The value of "--long=value" or "-s=value", when `a` is that option in that form.
std::optional<std::string> inline_value(const std::string& a, const char* long_name, const char* short_name) {
  for (const char* name : {long_name, short_name}) {
    const std::string prefix = std::string(name) + "=";
    if (a.rfind(prefix, 0) == 0) return a.substr(prefix.size());
  }
  return std::nullopt;
}

void set_reporter(Forwarded& f, const std::string& spec) {
  // Catch2 v3: "junit::out=FILE::colour-mode=none"; v2: just the name.
  const std::size_t cut = spec.find("::");
  f.reporter = spec.substr(0, cut);
  f.reporter_options.clear();
  std::size_t at = cut;
  while (at != std::string::npos) {
    const std::size_t next = spec.find("::", at + 2);
    const std::string part = spec.substr(at + 2, next == std::string::npos ? std::string::npos : next - at - 2);
    if (part.rfind("out=", 0) == 0)
      f.out = part.substr(4);
    else
      f.reporter_options += "::" + part;
    at = next;
  }
}

std::string read_file(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

// The last `lines` lines of `text`: what a crashed case's output is remembered by.
std::string tail(const std::string& text, int lines) {
  int seen = 0;
  for (std::size_t i = text.size(); i > 0; --i) {
    // a last line's own newline does not count
    if (text[i - 1] == '\n' && i != text.size() && ++seen == lines) return text.substr(i);
  }
  return text;
}

std::vector<std::string> child_environment(const std::string& name) {
  std::vector<std::string> env;
  for (char** e = environ; e != nullptr && *e != nullptr; ++e) {
    const std::string kv = *e;
    if (kv.rfind("CML_CHILD=", 0) == 0 || kv.rfind("CML_CHILD_CASE=", 0) == 0) continue;
    env.push_back(kv);
  }
  env.push_back("CML_CHILD=1");
  env.push_back("CML_CHILD_CASE=" + name);
  return env;
}

std::string self_path(const std::string& argv0) {
  std::error_code ec;
  const auto p = fs::read_symlink("/proc/self/exe", ec);
  return ec ? argv0 : p.string();
}

// What became of one case. A case not run (its step's kernel had already hung) counts as
// skipped: it neither passed nor showed a mistake of its own, and the run fails anyway by
// the case that hung.
struct Verdict {
  enum class State { passed, failed, skipped, not_run } state = State::failed;
  std::vector<std::string> testcases;  // its JUnit <testcase> elements
  std::string message;                 // the supervisor's own diagnosis, if any
  const char* label = "FAILED";
};

struct Supervisor {
  const std::vector<std::string>& args;
  Forwarded fwd;
  double timeout_s;
  std::string suite;
  fs::path scratch;
  std::FILE* console;  // stdout, or stderr when the merged report goes to stdout

  Verdict run_case(const Case& c, std::size_t index);
  Verdict not_run(const Case& c, int step, const std::string& hung);
  Verdict not_for_this_gpu(const Case& c);
  void show(const std::string& text) const {
    if (text.empty()) return;
    std::fputs(text.c_str(), console);
    if (text.back() != '\n') std::fputc('\n', console);
  }
};

Verdict Supervisor::run_case(const Case& c, std::size_t index) {
  const std::string stem = "case" + std::to_string(index);
  const fs::path log = scratch / (stem + ".log");
  const fs::path report = scratch / (stem + (fwd.junit() ? ".xml" : ".out"));
  std::vector<std::string> argv{self_path(args.at(0))};
  argv.insert(argv.end(), fwd.passthrough.begin(), fwd.passthrough.end());
  if (fwd.junit()) {
    argv.insert(argv.end(), {"-r", "junit", "-o", report.string()});
  } else {
    if (!fwd.reporter.empty()) argv.insert(argv.end(), {"-r", fwd.reporter + fwd.reporter_options});
    if (!fwd.out.empty()) argv.insert(argv.end(), {"-o", report.string()});
  }
  argv.push_back(escape_spec(c.name));

  std::fflush(nullptr);
  const ChildOutcome o = run_with_watchdog(argv, child_environment(c.name), log.string(), timeout_s);
  const std::string output = read_file(log);
  show(output);
  if (!fwd.junit() && !fwd.out.empty()) {  // the children's report text, in order
    std::ofstream(fwd.out, std::ios::app | std::ios::binary) << read_file(report);
  }

  const auto step = step_of(c.tags, c.name);
  const std::string report_text = fwd.junit() ? read_file(report) : std::string();
  Verdict v;
  v.testcases = junit::testcases(report_text);
  const bool reported_failure = [&] {
    for (const auto& t : v.testcases)
      if (junit::has_failure(t)) return true;
    return false;
  }();
  const auto sticky = sticky_cuda_error(output + report_text);

  if (!o.started) {
    v.message = "could not start the test process of " + step_words(step) + ": " + o.error + " (" + c.name + ")";
  } else if (o.timed_out) {
    v.message = timeout_message(step, timeout_s, c.name);
    if (!o.reaped) v.message += "; its process did not end after SIGKILL either (stuck in the GPU driver?)";
    v.label = "TIMED OUT";
    v.testcases.clear();  // whatever it wrote before it hung is not its result
  } else if (o.exited && (o.exit_code == 0 || o.exit_code == 77)) {
    v.state = o.exit_code == 0 ? Verdict::State::passed : Verdict::State::skipped;
    v.label = o.exit_code == 0 ? "passed" : "skipped";
  } else if (o.exited && o.exit_code == 1 && (!fwd.junit() || reported_failure)) {
    if (sticky) v.message = sticky_message(step, *sticky, c.name);  // its own failure says the rest
  } else if (o.exited && (o.exit_code == 2 || o.exit_code == 3)) {
    v.message = "the supervisor could not run " + step_words(step) + " alone (exit " + std::to_string(o.exit_code) +
                "): see its output (" + c.name + ")";
    v.testcases.clear();
  } else {
    v.message = o.exited ? exit_message(step, o.exit_code, c.name) : crash_message(step, o.signal, c.name, output);
    if (sticky) v.message += "; before that, " + sticky_message(step, *sticky, c.name);
    v.label = o.exited ? "FAILED" : "CRASHED";
    if (!reported_failure) v.testcases.clear();  // a crash after a passing report is no pass
  }

  if (v.state == Verdict::State::failed && fwd.junit()) {
    if (v.testcases.empty()) {
      v.testcases.push_back(junit::failed_testcase(suite, c.name, o.seconds, v.message, tail(output, 40)));
    } else if (!v.message.empty()) {
      for (auto& t : v.testcases)
        if (junit::has_failure(t)) {
          t = junit::annotate_failure(t, v.message);
          break;
        }
    }
  }
  char secs[32];
  std::snprintf(secs, sizeof secs, "%.1f", o.seconds);
  std::fprintf(console, "isolation: %s after %s s: %s\n", v.label, secs, c.name.c_str());
  if (!v.message.empty()) std::fprintf(console, "isolation: %s\n", v.message.c_str());
  std::fflush(console);
  return v;
}

// A case of a step whose kernel already hung in `hung`: reported at once, not run, so one
// hang costs the watchdog's time once, not once for each of the step's cases.
Verdict Supervisor::not_run(const Case& c, int step, const std::string& hung) {
  Verdict v;
  v.state = Verdict::State::not_run;
  v.label = "not run";
  v.message = not_run_message(step, hung);
  if (fwd.junit()) v.testcases.push_back(junit::not_run_testcase(suite, c.name, v.message));
  std::fprintf(console, "isolation: %s: %s\nisolation: %s\n", v.label, c.name.c_str(), v.message.c_str());
  std::fflush(console);
  return v;
}
// A case whose step needs what this GPU lacks (Case::skip): a skip with the reason, not run.
Verdict Supervisor::not_for_this_gpu(const Case& c) {
  Verdict v;
  v.state = Verdict::State::skipped;
  v.label = "skipped";
  v.message = c.skip;
  if (fwd.junit()) v.testcases.push_back(junit::not_run_testcase(suite, c.name, v.message));
  std::fprintf(console, "isolation: %s: %s\nSKIP: %s\n", v.label, c.name.c_str(), v.message.c_str());
  std::fflush(console);
  return v;
}
}  // namespace

Forwarded forwarded_options(const std::vector<std::string>& args) {
  Forwarded f;
  for (std::size_t i = 1; i < args.size(); ++i) {
    const std::string& a = args[i];
    const bool has_next = i + 1 < args.size();
    if ((a == "-r" || a == "--reporter") && has_next) {
      set_reporter(f, args[++i]);
    } else if (auto r = inline_value(a, "--reporter", "-r")) {
      set_reporter(f, *r);
    } else if ((a == "-o" || a == "--out") && has_next) {
      f.out = args[++i];
    } else if (auto o = inline_value(a, "--out", "-o")) {
      f.out = *o;
    } else if (passed_on_with_value(a) && has_next) {
      f.passthrough.push_back(a);
      f.passthrough.push_back(args[++i]);
    } else if (passed_on_flag(a) || (a.rfind("--", 0) == 0 && a.find('=') != std::string::npos &&
                                     passed_on_with_value(a.substr(0, a.find('='))))) {
      f.passthrough.push_back(a);
    }
  }
  return f;
}

int supervise(const std::vector<Case>& cases, const std::vector<std::string>& args, double timeout_s) {
  const auto start = std::chrono::steady_clock::now();
  Supervisor s{args, forwarded_options(args), timeout_s, fs::path(args.at(0)).filename().string(), {}, stdout};
  if (s.fwd.junit() && (s.fwd.out.empty() || s.fwd.out == "-")) s.console = stderr;

  std::string pattern = (fs::temp_directory_path() / "cml-isolation-XXXXXX").string();
  if (mkdtemp(pattern.data()) == nullptr) {
    std::fprintf(stderr, "isolation: cannot make a scratch folder %s: %s\n", pattern.c_str(), std::strerror(errno));
    return 1;
  }
  s.scratch = pattern;
  if (!s.fwd.junit() && !s.fwd.out.empty()) std::ofstream(s.fwd.out, std::ios::trunc);
  forward_termination_signals();

  std::vector<std::string> merged;
  std::map<int, std::string> hung;  // step -> the first of its cases the watchdog killed
  int passed = 0, failed = 0, skipped = 0, timed_out = 0, crashed = 0, not_run = 0;
  for (std::size_t i = 0; i < cases.size(); ++i) {
    const auto step = step_of(cases[i].tags, cases[i].name);
    const auto earlier = step ? hung.find(*step) : hung.end();
    Verdict v = !cases[i].skip.empty()  ? s.not_for_this_gpu(cases[i])
                : earlier != hung.end() ? s.not_run(cases[i], *step, earlier->second)
                                        : s.run_case(cases[i], i);
    const bool timed = std::strcmp(v.label, "TIMED OUT") == 0;
    if (timed && step) hung.emplace(*step, cases[i].name);
    passed += v.state == Verdict::State::passed;
    skipped += v.state == Verdict::State::skipped || v.state == Verdict::State::not_run;
    not_run += v.state == Verdict::State::not_run;
    failed += v.state == Verdict::State::failed;
    timed_out += timed;
    crashed += std::strcmp(v.label, "CRASHED") == 0;
    merged.insert(merged.end(), v.testcases.begin(), v.testcases.end());
  }
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();

  if (s.fwd.junit()) {
    const std::string doc = junit::document(s.suite, merged, seconds);
    if (s.fwd.out.empty() || s.fwd.out == "-") {
      std::fputs(doc.c_str(), stdout);
    } else {
      std::ofstream out(s.fwd.out, std::ios::trunc | std::ios::binary);
      out << doc;
      if (!out) std::fprintf(stderr, "isolation: cannot write the report %s\n", s.fwd.out.c_str());
    }
  }
  std::error_code ec;
  fs::remove_all(s.scratch, ec);

  const std::string not_run_words =
      not_run > 0 ? " (" + std::to_string(not_run) + " not run: their step's kernel had hung)" : std::string();
  std::fprintf(s.console,
               "isolation: %zu test case(s), each in its own process (at most %s s each): %d passed, %d failed "
               "(%d timed out, %d crashed), %d skipped%s\n",
               cases.size(), seconds_words(timeout_s).c_str(), passed, failed, timed_out, crashed, skipped,
               not_run_words.c_str());
  if (failed > 0) {
    std::fflush(nullptr);
    return cml::kExitWrong;
  }
  if (passed == 0 && skipped > 0) {
    std::fprintf(s.console, "SKIP: all %d test case(s) skipped\n", skipped);
    std::fflush(nullptr);
    return cml::kExitSkip;
  }
  std::fflush(nullptr);
  return cml::kExitOk;
}

}  // namespace cml::test::isolation
