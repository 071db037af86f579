// Our own Catch2 main, for v2 and v3 alike. It counts test cases that ran, failed and
// skipped, and turns them into the course's exit codes: 1 when anything failed, 77 when
// every test case that ran skipped (or, for GPU tests, when there is no GPU at all: that
// check comes before Catch2 starts), else 0. A skip is never counted as a pass.
//
// Environment: CML_TESTS=correctness runs only [correctness] cases (sanitizer setups);
// CML_TRACE=off turns the CUPTI trace off (mechanism tests then skip).
#define CATCH_CONFIG_RUNNER
#include "catch.hpp"

#include "cml/exit_codes.hpp"

#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <mutex>
#include <string>
#include <vector>

#if defined(CML_GPU_TESTS)
#include "cml/device.hpp"
#endif

namespace cml::test {

namespace {
struct Tally {
  int started = 0;
  int failed = 0;
  int skipped = 0;
  bool current_skipped = false;
} tally;
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
#if defined(CML_GPU_TESTS)
  if (auto why = cml::cuda_unavailable_reason()) {
    std::printf("SKIP: %s\n", why->c_str());
    return cml::kExitSkip;
  }
#endif
  std::vector<char*> args(argv, argv + argc);
  std::string filter;
  if (const char* only = std::getenv("CML_TESTS"); only != nullptr && *only != '\0') {
    filter = std::string("[") + only + "]";
    args.push_back(filter.data());
  }
  for (char* a : args)  // listings run no test case: nothing to tally
    if (std::string(a).rfind("--list", 0) == 0) {
      Catch::Session listing;
      if (listing.applyCommandLine(static_cast<int>(args.size()), args.data()) != 0) return cml::kExitUsage;
      listing.run();
      return cml::kExitOk;
    }
  Catch::Session session;
  const int rc = session.applyCommandLine(static_cast<int>(args.size()), args.data());
  if (rc != 0) return cml::kExitUsage;
  const int run_rc = session.run();
  using cml::test::tally;
  if (tally.failed > 0 || (run_rc != 0 && tally.skipped < tally.started)) return cml::kExitWrong;
  if (tally.started == 0) {
    // --list-tests and friends run no case and are fine; a filter that matched nothing is not.
    return run_rc == 0 ? cml::kExitOk : cml::kExitUsage;
  }
  if (tally.skipped == tally.started) {
    std::printf("SKIP: all %d test case(s) skipped\n", tally.started);
    return cml::kExitSkip;
  }
  return cml::kExitOk;
}
