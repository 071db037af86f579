// Error types and the throwing CUDA check every chapter uses. A failed CUDA call throws
// cml::CudaError naming the call, file:line and CUDA's own message; main() turns it into
// exit code 1 (see program.hpp).
#pragma once

#include <cuda_runtime_api.h>

#include <cstdio>
#include <stdexcept>
#include <string>

namespace cml {

// A CUDA runtime call returned an error.
class CudaError : public std::runtime_error {
 public:
  CudaError(cudaError_t code, const char* call, const char* file, int line)
      : std::runtime_error(std::string(call) + " failed at " + file + ":" + std::to_string(line) + ": " +
                           cudaGetErrorName(code) + ": " + cudaGetErrorString(code)),
        code_(code) {}
  cudaError_t code() const noexcept { return code_; }

 private:
  cudaError_t code_;
};

// The command line was wrong (exit 2). The message is one line, shown as it is.
class UsageError : public std::runtime_error {
  using std::runtime_error::runtime_error;
};

// This machine cannot run the program or test: no GPU, or a missing feature (exit 77).
class Skip : public std::runtime_error {
  using std::runtime_error::runtime_error;
};

// A check of the result or of the mechanism failed (exit 1).
class CheckFailed : public std::runtime_error {
  using std::runtime_error::runtime_error;
};

inline void check_cuda(cudaError_t code, const char* call, const char* file, int line) {
  if (code != cudaSuccess) throw CudaError(code, call, file, line);
}

namespace detail {
// Destructors must not throw: a failed release is reported and the program goes on.
inline void warn_on_error(cudaError_t code, const char* what) noexcept {
  if (code != cudaSuccess) std::fprintf(stderr, "warning: %s failed: %s\n", what, cudaGetErrorString(code));
}
}  // namespace detail

// Runs a release step from a destructor: an exception is reported as a warning, never
// thrown on (a destructor that throws ends the program).
template <typename Release>
void release_noexcept(Release&& release, const char* what) noexcept {
  try {
    release();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "warning: %s failed: %s\n", what, e.what());
  } catch (...) {
    std::fprintf(stderr, "warning: %s failed\n", what);
  }
}

}  // namespace cml

// Wrap every CUDA runtime call: CUDA_CHECK(cudaMemcpy(...));
#define CUDA_CHECK(expr) ::cml::check_cuda((expr), #expr, __FILE__, __LINE__)

// After every kernel launch: catches a bad configuration at once, not at the next sync.
#define CUDA_CHECK_LAUNCH() ::cml::check_cuda(cudaGetLastError(), "kernel launch", __FILE__, __LINE__)
