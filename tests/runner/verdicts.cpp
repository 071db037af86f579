// See verdicts.hpp.
#include "verdicts.hpp"

#include "cml/crash_note.hpp"

#include <cmath>
#include <csignal>
#include <cstdio>
#include <cstring>

namespace cml::test::isolation {

namespace {
struct Sticky {
  const char* name;
  const char* text;   // cudaGetErrorString's words
  const char* where;  // where a learner's mistake usually is
};

// The errors after which every later CUDA call of the process fails: the reason a case
// that hits one must not share its process with the next.
constexpr Sticky kSticky[] = {
    {"cudaErrorIllegalAddress", "an illegal memory access was encountered",
     "look for an index past the end of a buffer, or a null or host pointer used in a kernel"},
    {"cudaErrorMisalignedAddress", "misaligned address",
     "look for a wide load or store (float4: 16 bytes) at an address that is not a multiple of its size"},
    {"cudaErrorLaunchFailure", "unspecified launch failure",
     "look for an out-of-bounds access or a bad pointer in a kernel"},
    {"cudaErrorAssert", "device-side assert triggered", "an assert() in a kernel failed"},
    {"cudaErrorIllegalInstruction", "an illegal instruction was encountered",
     "look for a trap or inline PTX that is not valid on this GPU"},
    {"cudaErrorHardwareStackError", "hardware stack error",
     "look for deep recursion or a large local array in a kernel"},
    {"cudaErrorInvalidAddressSpace", "operation not supported on global/shared address space",
     "look for a shared-memory address used as a global one (or the reverse)"},
    {"cudaErrorInvalidPc", "invalid program counter", "look for a corrupted function pointer in a kernel"},
    {"cudaErrorLaunchTimeout", "the launch timed out and was terminated", "a kernel ran past the display's watchdog"},
};

const char* signal_name(int sig) {
  switch (sig) {
    case SIGSEGV: return "SIGSEGV: a bad pointer used on the host, e.g. a device pointer read by host code";
    case SIGBUS: return "SIGBUS: a bad or misaligned host memory access";
    case SIGABRT: return "SIGABRT: abort(), e.g. an exception thrown from a destructor or a failed assert";
    case SIGFPE: return "SIGFPE: an arithmetic error on the host, e.g. an integer division by zero";
    case SIGILL: return "SIGILL: an illegal host instruction";
    case SIGKILL: return "SIGKILL: killed from outside, e.g. by the out-of-memory killer";
    case SIGTERM: return "SIGTERM: stopped from outside";
    default: return nullptr;
  }
}
}  // namespace

std::string step_words(std::optional<int> step) {
  return step ? "step " + std::to_string(*step) : std::string("test case");
}

std::string seconds_words(double seconds) {
  char buf[32];
  if (std::fabs(seconds - std::round(seconds)) < 1e-9)
    std::snprintf(buf, sizeof buf, "%.0f", seconds);
  else
    std::snprintf(buf, sizeof buf, "%.3g", seconds);
  return buf;
}

std::string timeout_message(std::optional<int> step, double timeout_s, const std::string& name) {
  return "the kernel of " + step_words(step) + " never finished within " + seconds_words(timeout_s) +
         " s: look for a loop that never ends or a wait that never completes (" + name + ")";
}

std::string signal_message(std::optional<int> step, int signal, const std::string& name) {
  const char* what = signal_name(signal);
  std::string words = what != nullptr ? what : std::string("signal ") + std::to_string(signal);
  if (what == nullptr) {
    if (const char* s = strsignal(signal)) words = s;
  }
  return "the test process of " + step_words(step) + " was killed by signal " + std::to_string(signal) + " (" + words +
         ") (" + name + ")";
}

std::string crash_message(std::optional<int> step, int signal, const std::string& name, std::string_view output) {
  const char* what = signal_name(signal);
  const std::string sig = "signal " + std::to_string(signal) +
                          (what != nullptr ? " (" + std::string(what, std::strcspn(what, ":")) + ")" : std::string());
  if (const auto note = cml::last_crash_note(output))
    return step_words(step) + " crashed: " + *note + " [the test process was killed by " + sig + "] (" + name + ")";
  constexpr std::string_view kTerminate = "terminate called after throwing";
  if (const std::size_t at = output.rfind(kTerminate); at != std::string_view::npos) {
    // "terminate called after throwing an instance of 'T'\n  what():  the message"
    std::string_view rest = output.substr(at);
    const std::size_t w = rest.find("what():");
    std::string_view line = w == std::string_view::npos ? rest : rest.substr(w + 7);
    line = line.substr(0, line.find('\n'));
    while (!line.empty() && line.front() == ' ') line.remove_prefix(1);
    return step_words(step) +
           " crashed: an exception escaped where none may (a destructor, a thread's function, a "
           "callback of the GPU) and ended the process: " +
           std::string(line) + " [the test process was killed by " + sig + "] (" + name + ")";
  }
  return signal_message(step, signal, name);
}

std::string exit_message(std::optional<int> step, int exit_code, const std::string& name) {
  return "the test process of " + step_words(step) + " ended with exit status " + std::to_string(exit_code) +
         " without reporting its result (" + name + ")";
}

std::string not_run_message(int step, const std::string& hung) {
  return "not run: step " + std::to_string(step) + "'s kernel already hung in '" + hung + "' (fix that first)";
}

std::optional<std::string> sticky_cuda_error(std::string_view text) {
  const Sticky* first = nullptr;
  std::size_t first_at = std::string_view::npos;
  for (const auto& s : kSticky) {
    for (const char* needle : {s.name, s.text}) {
      const std::size_t at = text.find(needle);
      if (at < first_at) {
        first_at = at;
        first = &s;
      }
    }
  }
  if (first == nullptr) return std::nullopt;
  return std::string(first->name) + " (" + first->text + ")";
}

std::string sticky_message(std::optional<int> step, const std::string& error, const std::string& name) {
  const char* where = "look for a bad access in a kernel";
  for (const auto& s : kSticky)
    if (error.rfind(s.name, 0) == 0) where = s.where;
  return step_words(step) + " hit a sticky CUDA error, " + error +
         ": it ends the CUDA context of its process, so the case ran alone and the other steps "
         "still ran; " +
         where + " (" + name + ")";
}

}  // namespace cml::test::isolation
