// Test cases that do to a test process what a learner's worst mistakes do on a GPU: hang
// (a kernel that never ends), die of a signal, exit without a report, or fail with a
// sticky CUDA error's words. test_watchdog.py runs them through our main's supervisor
// (CML_ISOLATE=on) and checks that each is reported as itself and the others still run.
// Never run these in one process by hand: step 3's cases and the [.nostep] ones sleep forever.
#include "catch.hpp"
#include "crash_note_guard.hpp"

#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <spawn.h>
#include <stdexcept>
#include <string>
#include <thread>
#include <sys/wait.h>
#include <unistd.h>

extern char** environ;

TEST_CASE("step 1: a case that passes", "[watchdog][step1]") { CHECK(1 + 1 == 2); }

TEST_CASE("step 2: a case that fails with its own message", "[watchdog][step2]") {
  FAIL("the learner's own failure message");
}

// A kernel that never ends, as the host sees it: a wait that never returns. It also starts
// a helper process, as a test running ncu would, which the watchdog must kill too; the
// helper's and this process's ids go to CML_WATCHDOG_PIDFILE for the test to check.
TEST_CASE("step 3: a case that never ends", "[watchdog][step3]") {
  if (const char* pidfile = std::getenv("CML_WATCHDOG_PIDFILE")) {
    pid_t helper = 0;
    char sleep_arg[] = "sleep";
    char seconds[] = "300";
    char* argv[] = {sleep_arg, seconds, nullptr};
    REQUIRE(posix_spawnp(&helper, "sleep", nullptr, nullptr, argv, environ) == 0);
    std::ofstream(pidfile) << getpid() << " " << helper << "\n";
  }
  for (;;) std::this_thread::sleep_for(std::chrono::seconds(1));
}

TEST_CASE("step 4: a case that aborts", "[watchdog][step4]") { std::abort(); }

TEST_CASE("step 5: a case that dies of SIGSEGV", "[watchdog][step5]") { std::raise(SIGSEGV); }

// What CUDA_CHECK throws after an out-of-bounds store in a kernel.
TEST_CASE("step 6: a case that meets a sticky CUDA error", "[watchdog][step6]") {
  throw std::runtime_error(
      "cudaDeviceSynchronize() failed at exercise.cu:42: cudaErrorIllegalAddress: an illegal memory access "
      "was encountered");
}

TEST_CASE("step 7: a case that skips", "[watchdog][step7]") { CML_SKIP("this machine lacks the feature"); }

TEST_CASE("step 8: a name with, [brackets] \"quotes\" ~tilde *star and \\ backslash", "[watchdog][step8]") {
  CHECK(true);
}

TEST_CASE("step 9: a case that exits without a report", "[watchdog][step9]") {
  std::fflush(nullptr);
  std::_Exit(5);
}

// A test that runs this executable again (as chapter 04's runs itself under ncu): the run
// it starts must do its hidden case in-process, not be refused as the wrong case.
TEST_CASE("step 10: a case that runs this executable again on a hidden case", "[watchdog][step10]") {
  pid_t pid = 0;
  char self[] = "/proc/self/exe";
  char spec[] = "[.nested]";
  char* argv[] = {self, spec, nullptr};
  REQUIRE(posix_spawn(&pid, self, nullptr, nullptr, argv, environ) == 0);
  int status = 0;
  REQUIRE(waitpid(pid, &status, 0) == pid);
  CHECK(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) == 0);
}

// A crash under the code under test's note (tests/support/crash_note_guard.hpp): the supervisor
// must name the step and the note's cause, not the signal alone.
TEST_CASE("step 11: a case that crashes where a crash note names the cause", "[watchdog][step11]") {
  cml::test::CrashNote note("free_things crashed the process: release them with the call that matches (step 11)");
  std::raise(SIGSEGV);
}

// An exception thrown out of a destructor (noexcept): std::terminate, then SIGABRT.
struct ThrowsOnDestruction {
  ~ThrowsOnDestruction() noexcept(false) { throw std::runtime_error("the learner's release failed in a destructor"); }
};
void escape_from_noexcept() noexcept { ThrowsOnDestruction t; }

TEST_CASE("step 12: a case where an exception escapes a noexcept function", "[watchdog][step12]") {
  std::fflush(nullptr);
  escape_from_noexcept();
}

TEST_CASE("nested: the case step 10 runs", "[.nested]") { CHECK(std::getenv("CML_CHILD_CASE") == nullptr); }

// A second case of step 3 that would hang too (a step's cases launch the same kernel): once
// step 3's first case has hung, the supervisor must report this one as not run, at once,
// and never start it; it writes CML_WATCHDOG_STARTED for the test to see whether it did.
TEST_CASE("step 3: a second case that never ends", "[watchdog][step3]") {
  if (const char* started = std::getenv("CML_WATCHDOG_STARTED")) std::ofstream(started) << getpid() << "\n";
  for (;;) std::this_thread::sleep_for(std::chrono::seconds(1));
}

// A case of another step after it: a hang costs its own step's cases only.
TEST_CASE("step 13: a case that passes after step 3's cases", "[watchdog][step13]") { CHECK(2 * 2 == 4); }

// Two hanging cases of no step: without a step there is no kernel known to be shared, so
// both run and each is killed by the watchdog (hidden: the main run leaves them out).
TEST_CASE("a case of no step that never ends", "[.nostep]") {
  for (;;) std::this_thread::sleep_for(std::chrono::seconds(1));
}
TEST_CASE("another case of no step that never ends", "[.nostep]") {
  for (;;) std::this_thread::sleep_for(std::chrono::seconds(1));
}
