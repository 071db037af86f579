// The CUDA error a piece of test code met, or nothing. A kernel that reads past an array
// ending at an unmapped range (cml/end_guard.hpp) faults (cudaErrorIllegalAddress), and
// every later call of the process fails too: a caller stops at the first fault.
#pragma once

#include "cml/errors.hpp"

#include <optional>
#include <string>

namespace cml::test {

template <class Run>
std::optional<std::string> cuda_fault(Run&& run) {
  try {
    run();
  } catch (const cml::CudaError& e) {
    return std::string(e.what());
  }
  return std::nullopt;
}

}  // namespace cml::test
