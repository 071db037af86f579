// See watchdog.hpp.
#include "watchdog.hpp"

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstring>
#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>

namespace cml::test::isolation {

namespace {
// The process group of the child that runs now (0: none); read by the signal handler.
volatile std::sig_atomic_t running_group = 0;

// How long a SIGKILLed child may take to go: a process inside the GPU driver ends only
// when the driver lets it, and the supervisor must not hang on it in turn.
constexpr double kGraceSeconds = 30.0;

void on_termination(int sig) {
  const pid_t group = static_cast<pid_t>(running_group);
  if (group > 0) kill(-group, SIGKILL);
  std::signal(sig, SIG_DFL);
  std::raise(sig);
}

double since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

// Waits until `pid` has ended or `limit` seconds from `start` have passed; true when it
// ended. It is left unreaped (a zombie), so its process id, which names its group, cannot
// be reused before the group is killed.
bool wait_until(pid_t pid, std::chrono::steady_clock::time_point start, double limit) {
  auto pause = std::chrono::milliseconds(1);
  for (;;) {
    siginfo_t info{};
    const int r = waitid(P_PID, static_cast<id_t>(pid), &info, WEXITED | WNOHANG | WNOWAIT);
    if (r == 0 && info.si_pid == pid) return true;
    if (r < 0 && errno != EINTR) return true;  // ECHILD: nothing left to wait for
    if (since(start) >= limit) return false;
    std::this_thread::sleep_for(pause);
    pause = std::min(pause * 2, std::chrono::milliseconds(50));  // fast cases stay fast
  }
}

std::vector<char*> pointers(const std::vector<std::string>& strings) {
  std::vector<char*> out;
  out.reserve(strings.size() + 1);
  for (const auto& s : strings) out.push_back(const_cast<char*>(s.c_str()));
  out.push_back(nullptr);
  return out;
}
}  // namespace

ChildOutcome run_with_watchdog(const std::vector<std::string>& argv, const std::vector<std::string>& env,
                               const std::string& log_path, double timeout_s) {
  ChildOutcome out;
  posix_spawn_file_actions_t files;
  posix_spawnattr_t attr;
  posix_spawn_file_actions_init(&files);
  posix_spawnattr_init(&attr);
  posix_spawn_file_actions_addopen(&files, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_addopen(&files, 1, log_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  posix_spawn_file_actions_adddup2(&files, 1, 2);
  // Own process group (so one kill reaches the child's helpers too), default handlers for
  // the signals we catch, nothing blocked.
  sigset_t defaults;
  sigset_t none;
  sigemptyset(&defaults);
  sigemptyset(&none);
  for (int s : {SIGINT, SIGTERM, SIGHUP, SIGPIPE}) sigaddset(&defaults, s);
  posix_spawnattr_setpgroup(&attr, 0);
  posix_spawnattr_setsigdefault(&attr, &defaults);
  posix_spawnattr_setsigmask(&attr, &none);
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETSIGMASK);

  auto args = pointers(argv);
  auto envp = pointers(env);
  const auto start = std::chrono::steady_clock::now();
  pid_t pid = 0;
  const int rc = posix_spawn(&pid, argv.at(0).c_str(), &files, &attr, args.data(), envp.data());
  posix_spawn_file_actions_destroy(&files);
  posix_spawnattr_destroy(&attr);
  if (rc != 0) {
    out.error = std::string("cannot start ") + argv[0] + ": " + std::strerror(rc);
    return out;
  }
  out.started = true;
  running_group = pid;

  if (!wait_until(pid, start, timeout_s)) {
    out.timed_out = true;
    kill(pid, SIGKILL);  // in case it left its group
    kill(-pid, SIGKILL);
    out.reaped = wait_until(pid, std::chrono::steady_clock::now(), kGraceSeconds);
  }
  // Helpers the case left running in its group (a stray `sleep`, a hung ncu) must not
  // outlive it; the group still exists while the child is an unreaped zombie.
  kill(-pid, SIGKILL);
  running_group = 0;
  int status = 0;
  if (out.reaped && waitpid(pid, &status, 0) != pid) out.reaped = false;
  out.seconds = since(start);
  if (out.reaped && WIFEXITED(status)) {
    out.exited = true;
    out.exit_code = WEXITSTATUS(status);
  } else if (out.reaped && WIFSIGNALED(status)) {
    out.signal = WTERMSIG(status);
  }
  return out;
}

void forward_termination_signals() {
  for (int s : {SIGINT, SIGTERM, SIGHUP}) std::signal(s, on_termination);
}

}  // namespace cml::test::isolation
