// Our own Catch2 main, for v2 and v3 alike. It counts test cases that ran, failed and
// skipped, and turns them into the course's exit codes: 1 when anything failed, 77 when
// every test case that ran skipped (or, for GPU tests, when there is no GPU at all: that
// check comes before Catch2 starts), else 0. A skip is never counted as a pass.
//
// Two ways to run (supervisor.hpp says why): GPU test executables run as a supervisor that
// starts each selected test case in a process of its own under a watchdog; the children,
// and CPU test executables, run their cases in this process, as Catch2 does.
//
// Environment:
//   CML_TESTS=correctness  runs only [correctness] cases (sanitizer setups);
//   CML_TRACE=off          turns the CUPTI trace off (mechanism tests then skip);
//   CML_ISOLATE=off|on     one process for all cases (sanitizer setups, debugging by hand),
//                          or one per case (the default for GPU tests only);
//   CML_CASE_TIMEOUT=S     seconds a case may take when isolated before it is killed (60);
//   CML_CHILD=1            set by the supervisor for its children (with CML_CHILD_CASE, the
//                          name of the one case the child must run), never by hand.
//
// GPU tests run only what the GPU can: a chapter needing what it lacks exits 77 with the
// reason, and the cases of a step needing it are skipped, each with the reason (needs.txt,
// through cml/needs.hpp, read by the case's [chNN] and [stepK] tags) - never run to fail.
#define CATCH_CONFIG_RUNNER
#include "catch.hpp"

#include "supervisor.hpp"
#include "verdicts.hpp"

#include "cml/exit_codes.hpp"
#include "cml/tools.hpp"

#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <map>
#include <optional>
#include <stdlib.h>  // setenv, unsetenv
#include <string>
#include <vector>

#if defined(CML_GPU_TESTS)
#include "cml/device.hpp"
#include "cml/errors.hpp"
#include "cml/needs.hpp"
#endif
#include "case_names.hpp"

namespace cml::test {

namespace {
struct Tally {
  int started = 0;
  int failed = 0;
  int skipped = 0;
  bool current_skipped = false;
  std::string last_name;
} tally;

// The exit status for the cases this process ran (Catch2 returned `run_rc`). A child of
// the supervisor does not announce "all skipped": its one case's skip is already reported.
int exit_code(int run_rc, bool announce = true) {
  if (tally.failed > 0 || (run_rc != 0 && tally.skipped < tally.started)) return kExitWrong;
  if (tally.started == 0) {
    // --list-tests and friends run no case and are fine; a filter that matched nothing is not.
    return run_rc == 0 ? kExitOk : kExitUsage;
  }
  if (tally.skipped == tally.started) {
    if (announce) std::printf("SKIP: all %d test case(s) skipped\n", tally.started);
    return kExitSkip;
  }
  return kExitOk;
}

std::string environment(const char* name) {
  const char* v = std::getenv(name);
  return v != nullptr ? v : "";
}

// Listings, help and the like run no test case: nothing to isolate or tally.
bool is_query(const std::vector<std::string>& args) {
  for (std::size_t i = 1; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (a.rfind("--list", 0) == 0 || a == "-l" || a == "-t" || a == "-h" || a == "-?" || a == "--help" ||
        a == "--libidentify")
      return true;
  }
  return false;
}

// Whether to run one process per case: CML_ISOLATE, else this executable's default.
std::optional<bool> isolate_wanted() {
  const std::string v = environment("CML_ISOLATE");
#if defined(CML_GPU_TESTS)
  if (v.empty()) return true;
#else
  if (v.empty()) return false;
#endif
  if (v == "on" || v == "1" || v == "yes") return true;
  if (v == "off" || v == "0" || v == "no") return false;
  return std::nullopt;
}

// The cases Catch2 would run for this command line, in its order.
std::vector<isolation::Case> selected_cases(Catch::Session& session) {
  auto& config = session.config();
  std::vector<isolation::Case> out;
  for (const auto& tc : Catch::filterTests(Catch::getAllTestCasesSorted(config), config.testSpec(), config)) {
#if defined(CML_CATCH2_V3)
    const auto& info = tc.getTestCaseInfo();
#else
    const auto& info = tc;
#endif
    out.push_back({info.name, info.tagsAsString(), ""});
  }
  return out;
}

#if defined(CML_GPU_TESTS)
// "08" of a [ch08] tag, else "".
std::string chapter_of(const std::string& tags) {
  const std::size_t at = tags.find("[ch");
  return at == std::string::npos || at + 5 >= tags.size() || tags[at + 5] != ']' ? "" : tags.substr(at + 3, 2);
}

// What needs.txt says this GPU cannot run, for the cases of this executable (all of one
// chapter): the chapter's reason (its whole chapter skips), else each step's.
struct Unmet {
  std::string chapter;               // the chapter's own reason, "" when it can run
  std::map<int, std::string> steps;  // step -> reason
};

Unmet unmet_needs(Catch::Session& session) {
  const auto& config = session.config();
  const std::string chosen = environment("CML_DEVICE");
  const cml::DeviceFacts gpu = cml::read_capabilities(chosen.empty() ? 0 : std::atoi(chosen.c_str()));
  Unmet u;
  for (const auto& tc : Catch::getAllTestCasesSorted(config)) {
#if defined(CML_CATCH2_V3)
    const auto& info = tc.getTestCaseInfo();
#else
    const auto& info = tc;
#endif
    const std::string tags = info.tagsAsString(), ch = chapter_of(tags);
    if (ch.empty()) continue;
    if (u.chapter.empty()) u.chapter = cml::needs::missing_for(ch, 0, gpu);
    if (const auto step = isolation::step_of(tags, info.name); step && u.steps.count(*step) == 0) {
      const std::string why = cml::needs::missing_for(ch, *step, gpu);
      if (!why.empty()) u.steps[*step] = why;
    }
  }
  return u;
}

// One process for every case: the steps this GPU cannot run are taken out of the test spec
// (each said once), so that what runs is only what can. False when nothing is left.
bool leave_out_steps(Catch::Session& session, const Unmet& unmet) {
  if (unmet.steps.empty()) return true;
  std::string out;
  for (const auto& [step, why] : unmet.steps) {
    std::printf("SKIP: %s\n", why.c_str());
    out += "~[step" + std::to_string(step) + "]";
  }
  auto data = session.configData();
  if (data.testsOrTags.empty()) {
    data.testsOrTags.push_back("~[.]" + out);  // exclusions alone must still leave hidden cases out
  } else {
    for (auto& spec : data.testsOrTags) spec += out;
  }
  session.useConfigData(data);
  return !selected_cases(session).empty();
}
#endif

// A child of the supervisor: runs its one case, and proves it was that one (a name the
// test-spec syntax could not express exactly would otherwise run the wrong cases).
int run_child(Catch::Session& session) {
  // Processes this case starts (the same executable under ncu, on a hidden case) keep
  // CML_CHILD, so they run in-process too, but not the name they are not running.
  const std::string expected = environment("CML_CHILD_CASE");
  unsetenv("CML_CHILD_CASE");
  const int rc = exit_code(session.run(), false);
  if (!expected.empty() && (tally.started != 1 || tally.last_name != expected)) {
    std::printf(
        "isolation: this process was to run the test case \"%s\" alone, but its test spec selected %d case(s)\n",
        expected.c_str(), tally.started);
    return 3;
  }
  return rc;
}
}  // namespace

void note_skip(const std::string& why) {
  if (!tally.current_skipped) ++tally.skipped;
  tally.current_skipped = true;
  // std::cerr, not stderr: Catch2 v2 captures std::cerr into the JUnit report, so
  // ./lab check can show which test skipped and why.
  std::cerr << "SKIP: " << why << std::endl;
}

#if defined(CML_CATCH2_V3)
using ListenerBase = Catch::EventListenerBase;
#else
using ListenerBase = Catch::TestEventListenerBase;
#endif

class TallyListener : public ListenerBase {
 public:
  using ListenerBase::ListenerBase;
  void testCaseStarting(const Catch::TestCaseInfo& info) override {
    ListenerBase::testCaseStarting(info);
    ++tally.started;
    tally.current_skipped = false;
    tally.last_name = info.name;
  }
  void testCaseEnded(const Catch::TestCaseStats& stats) override {
    ListenerBase::testCaseEnded(stats);
    if (stats.totals.assertions.failed > 0) ++tally.failed;
  }
};

}  // namespace cml::test

using cml::test::TallyListener;
CATCH_REGISTER_LISTENER(TallyListener)

int main(int argc, char** argv) {
  using namespace cml::test;
#if defined(CML_GPU_TESTS)
  // Every kernel is loaded when CUDA starts, not at its first launch. Lazy loading (CUDA's
  // default since 12.2) loads a kernel at its first launch and waits for the work already
  // running to do so: a learner's launcher called while a gate kernel holds its stream
  // (support/gate.hpp) would then wait for the gate, and look as if it had blocked. Set
  // before the first CUDA call, for this process and the ones it starts (cases, tools).
  setenv("CUDA_MODULE_LOADING", "EAGER", 1);
  if (auto why = cml::cuda_unavailable_reason()) {
    std::printf("SKIP: %s\n", why->c_str());
    return cml::kExitSkip;
  }
#endif
  const bool child = environment("CML_CHILD") == "1";
  std::vector<std::string> args(argv, argv + argc);
  // A child's one test spec already went through the supervisor's CML_TESTS filter.
  if (const std::string only = environment("CML_TESTS"); !only.empty() && !child) args.push_back("[" + only + "]");
  std::vector<char*> c_args;
  for (auto& a : args) c_args.push_back(a.data());

  // One Session for the whole run: Catch2 v2 forgets the registered tests when a Session
  // is destroyed, so a second one would find none.
  Catch::Session session;
  if (session.applyCommandLine(static_cast<int>(c_args.size()), c_args.data()) != 0) return cml::kExitUsage;
  if (child) return run_child(session);
  if (is_query(args)) {
    session.run();
    return cml::kExitOk;
  }
#if defined(CML_GPU_TESTS)
  Unmet unmet;
  try {
    unmet = unmet_needs(session);
  } catch (const cml::UsageError& e) {
    std::fprintf(stderr, "CML_DEVICE: %s\n", e.what());
    return cml::kExitUsage;
  }
  if (!unmet.chapter.empty()) {
    std::printf("SKIP: %s\n", unmet.chapter.c_str());
    return cml::kExitSkip;
  }
#endif
  const auto isolate = isolate_wanted();
  if (!isolate) {
    std::fprintf(stderr, "CML_ISOLATE must be on or off, not '%s'\n", environment("CML_ISOLATE").c_str());
    return cml::kExitUsage;
  }
  if (*isolate) {
    const std::string limit = environment("CML_CASE_TIMEOUT");
    const auto timeout_s = cml::tools::case_timeout_s();
    if (!timeout_s) {
      std::fprintf(stderr, "CML_CASE_TIMEOUT must be a number of seconds above 0, not '%s'\n", limit.c_str());
      return cml::kExitUsage;
    }
    auto cases = selected_cases(session);
#if defined(CML_GPU_TESTS)
    for (auto& c : cases)
      if (const auto step = isolation::step_of(c.tags, c.name); step && unmet.steps.count(*step) > 0)
        c.skip = unmet.steps.at(*step);
#endif
    // No case selected: Catch2 itself says so, with its own exit status.
    if (!cases.empty()) return isolation::supervise(cases, args, *timeout_s);
  }
#if defined(CML_GPU_TESTS)
  if (!leave_out_steps(session, unmet)) {
    std::printf("SKIP: every selected test case is of a step this GPU cannot run\n");
    return cml::kExitSkip;
  }
#endif
  return exit_code(session.run());
}
