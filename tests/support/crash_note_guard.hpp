// A note for a crash of the code under test: what the supervisor cannot know from a signal
// alone (which call crashed, and the likely mistake). See cml/crash_note.hpp for how it
// reaches the learner.
#pragma once

#include "cml/crash_note.hpp"

#include <csignal>
#include <cstring>
#include <string>

#include <unistd.h>

namespace cml::test {

// While alive: if the process dies of SIGSEGV, SIGABRT or SIGBUS, writes `why` to stderr
// first, as one line that starts with cml::kCrashNotePrefix (the supervisor puts it first
// in what it says about the crashed case, after the step), then dies as it would have.
// `why` names the call that crashed and the likely mistake: "free_host_ints crashed the
// process: ... cudaFreeHost ... (step 1; ./lab hint 02)".
class CrashNote {
 public:
  explicit CrashNote(const std::string& why) {
    std::memcpy(previous_, text(), kSize);  // an outer note's, restored when this one ends
    // A line of its own (whatever the process wrote last), one line long.
    std::string line = "\n" + std::string(cml::kCrashNotePrefix) + why;
    for (std::size_t i = 1; i < line.size(); ++i)
      if (line[i] == '\n') line[i] = ' ';
    std::strncpy(text(), line.c_str(), kSize - 2);
    text()[kSize - 2] = '\0';
    std::strcat(text(), "\n");
    struct sigaction sa {};
    sa.sa_handler = &CrashNote::on_signal;
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = SA_RESETHAND;
    for (int i = 0; i < 3; ++i) sigaction(kSignals[i], &sa, &old_[i]);
  }
  ~CrashNote() {
    for (int i = 0; i < 3; ++i) sigaction(kSignals[i], &old_[i], nullptr);
    std::memcpy(text(), previous_, kSize);
  }
  CrashNote(const CrashNote&) = delete;
  CrashNote& operator=(const CrashNote&) = delete;

 private:
  static constexpr std::size_t kSize = 1024;
  static constexpr int kSignals[3] = {SIGSEGV, SIGABRT, SIGBUS};
  static char* text() {
    static char buffer[kSize];
    return buffer;
  }
  static void on_signal(int sig) {
    const char* t = text();
    const ssize_t ignored = write(STDERR_FILENO, t, std::strlen(t));
    (void)ignored;
    std::signal(sig, SIG_DFL);
    std::raise(sig);
  }
  struct sigaction old_[3]{};
  char previous_[kSize]{};
};

}  // namespace cml::test
