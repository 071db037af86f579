// Chapter 04 — how every mode of the program checks a kernel before it times it: one run
// over a poisoned output (an element nobody wrote is NaN and fails), then the CPU's answer.
#pragma once

#include "harness.hpp"

#include "cml/errors.hpp"
#include "cml/timing.hpp"
#include "cml/verify.hpp"

#include <cuda_runtime_api.h>

#include <functional>
#include <string>

namespace ch04 {

// Runs w once on `stream` over `arrays`' poisoned output and checks it. Prints the result
// (always with say_passed, otherwise only when wrong) and returns whether it was right.
inline bool run_checked(const Arrays& arrays, cudaStream_t stream, const cml::Work& w,
                        const std::function<cml::VerifyResult()>& check, const std::string& what,
                        bool say_passed = true) {
  arrays.poison(stream);
  w(stream);
  CUDA_CHECK_LAUNCH();
  CUDA_CHECK(cudaStreamSynchronize(stream));
  const cml::VerifyResult r = check();
  return (r.ok && !say_passed) || cml::report(r, what);
}

}  // namespace ch04
