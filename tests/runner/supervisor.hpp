// Supervisor mode of our test main: each selected test case runs in a child process (this
// same executable, CML_CHILD=1, the case's exact name as its only test spec) under a
// watchdog. A kernel that never ends or a sticky CUDA error then costs one case, not the
// rest of the executable: the case fails with a message naming its step and the others
// still run and report. Once a case of step K has hung (the watchdog killed it), the rest
// of step K's cases are not run: they launch the same kernel, and each would wait out the
// limit again (six cases of one step: six minutes). They are reported as skipped, naming
// the case that hung; cases of other steps, and of none, still run. The children's JUnit
// reports are merged into the one file asked for with `-r junit -o FILE` (./lab check reads
// it); other reporters' output is passed on.
#pragma once

#include <string>
#include <vector>

namespace cml::test::isolation {

// A test case as Catch2 listed it (after the command line's filters and CML_TESTS).
struct Case {
  std::string name;
  std::string tags;  // "[ch04][step2][perf]"
  std::string skip;  // why it is not run on this GPU (needs.txt), "" when it is run
};

// What of the supervisor's own command line matters to its children: the reporter and its
// output file, and the options worth passing on (-s, -d, -c, -v, -w, --rng-seed...). Test
// specs are not passed on: each child gets one case's name instead.
struct Forwarded {
  std::string reporter;          // reporter name, "" for Catch2's default
  std::string reporter_options;  // Catch2 v3's "::key=value" parts, `out` removed
  std::string out;               // -o FILE, "" for stdout
  std::vector<std::string> passthrough;
  bool junit() const { return reporter == "junit"; }
};
Forwarded forwarded_options(const std::vector<std::string>& args);

// Runs each case in its own process, at most `timeout_s` each (or not at all, after a hang
// of its step, or where it has a `skip` reason: reported as skipped with it); returns the course's exit code (1 any
// failure, 77 every case skipped, else 0: a case not run always follows a timed-out one, so its run is a failure).
// `args[0]` is how we were started.
int supervise(const std::vector<Case>& cases, const std::vector<std::string>& args, double timeout_s);

}  // namespace cml::test::isolation
