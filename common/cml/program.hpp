// The frame of every chapter program's main(): runs the body and turns what it throws into
// one clear line on stderr and the course's exit code (2 usage, 77 skip, 1 error).
#pragma once

#include <functional>

namespace cml {

// body returns the exit code (0 passed, 1 wrong result); exceptions map to
// UsageError -> 2, Skip -> 77 ("SKIP: ..."), CudaError / anything else -> 1.
int run_program(const std::function<int()>& body) noexcept;

// A program's last line, "PASSED" or "FAILED", and its exit code (0 or 1).
int finish(bool ok);

}  // namespace cml
