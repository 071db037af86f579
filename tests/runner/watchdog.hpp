// Runs one command in its own process group with a bounded wait: the supervisor's way to
// survive a test case whose kernel never ends. posix_spawn, never fork: the supervisor may
// have touched CUDA (the no-GPU probe), and a forked copy of a CUDA process is unusable.
#pragma once

#include <string>
#include <vector>

namespace cml::test::isolation {

struct ChildOutcome {
  bool started = false;    // false: posix_spawn failed (`error` says why)
  bool timed_out = false;  // killed by the watchdog after `timeout_s`
  bool exited = false;     // ended by exit(): `exit_code` is valid
  int exit_code = 0;
  int signal = 0;      // ended by this signal (after a time-out: SIGKILL, ours)
  bool reaped = true;  // false: it outlived SIGKILL by the grace period (stuck in a driver)
  double seconds = 0;
  std::string error;
};

// Runs `argv` (argv[0] is the program's path) with `env`, stdout and stderr both into
// `log_path`, stdin from /dev/null, in a new process group. After `timeout_s` the whole
// group gets SIGKILL (a test may have started helpers: ncu, cuobjdump...).
ChildOutcome run_with_watchdog(const std::vector<std::string>& argv, const std::vector<std::string>& env,
                               const std::string& log_path, double timeout_s);

// SIGINT, SIGTERM and SIGHUP (Ctrl-C, meson's own time-out) first kill the running child's
// process group, which does not share ours and would otherwise run on, holding the GPU.
void forward_termination_signals();

}  // namespace cml::test::isolation
