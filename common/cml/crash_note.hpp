// How a test process names the likely cause of its own crash: before it dies of a signal,
// the code under test's note (tests/support/crash_note_guard.hpp) is written to stderr as one
// line that starts with kCrashNotePrefix, and the supervisor (tests/runner/) puts the last
// such line first in what it reports, with the step, instead of the signal's name alone.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace cml {

inline constexpr std::string_view kCrashNotePrefix = "crash note: ";

// The text of the last crash note in `output` (without the prefix), if any.
inline std::optional<std::string> last_crash_note(std::string_view output) {
  std::optional<std::string> note;
  for (std::size_t at = output.find(kCrashNotePrefix); at != std::string_view::npos;
       at = output.find(kCrashNotePrefix, at + 1)) {
    if (at != 0 && output[at - 1] != '\n') continue;  // only at the start of a line
    const std::size_t begin = at + kCrashNotePrefix.size();
    const std::size_t end = output.find('\n', begin);
    note = std::string(output.substr(begin, end == std::string_view::npos ? std::string_view::npos : end - begin));
  }
  return note;
}

}  // namespace cml
