// Chapter 06 — one checked run of a kernel that writes floats, for every mode of the
// program: the output is poisoned first (harness.hpp's Output), so a kernel that did not
// run, an unreported launch error and a write past the end are named as such before the
// values are compared. Prints "what: PASSED" or "what: FAILED: why".
#pragma once

#include "modes.hpp"

#include <cuda_runtime_api.h>

#include <cstddef>
#include <functional>
#include <string>
#include <vector>

namespace ch06 {

// What is wrong with `got` ("" when nothing is).
using Compare = std::function<std::string(const std::vector<float>&)>;

// Runs `work` once on c.stream over a poisoned output of n floats, and reports under `what`
// (`passed` instead of "PASSED" when the values are right). True when they are.
bool run_and_check(Context& c, const std::string& what, const std::function<void(float*, cudaStream_t)>& work,
                   std::size_t n, const Compare& compare, const char* passed = "PASSED");

// Bit-exact equality with `want`, which must outlive the returned function.
Compare exactly(const std::vector<float>& want);

}  // namespace ch06
