// The hidden [.target] case's side of a tool run (sanitizer_target.hpp, the profile tests):
// the executable, run again under compute-sanitizer or ncu, is told by CML_TARGET which of
// its kernels to launch, as "<tool>:<name>" or plain "<name>".
#pragma once

#include <cstdio>
#include <cstdlib>
#include <optional>
#include <string>

namespace cml::test {

// The line a target prints on stderr as it starts: a tool's output that has it ran the
// target, so a failure after it is the kernel's, not the tool's (sanitizer_target.hpp).
inline constexpr const char* kTargetStarted = "cml target started: ";

// The name CML_TARGET gives, without any "<tool>:" before it; nullopt when it is unset (a
// normal run, in which the [.target] case does nothing).
inline std::optional<std::string> target_name() {
  const char* what = std::getenv("CML_TARGET");
  if (what == nullptr) return std::nullopt;
  const std::string target(what);
  std::fprintf(stderr, "%s%s\n", kTargetStarted, what);
  std::fflush(stderr);
  const auto colon = target.find(':');
  return colon == std::string::npos ? target : target.substr(colon + 1);
}

}  // namespace cml::test
