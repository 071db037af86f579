// Chapter 07 — --mode=trivially-copyable (program/trivially_copyable.cu): what
// cuda::memcpy_async does with an element type that is trivially copyable and with one that
// is not, checked against the CPU, beside the SASS of each kernel read from this program.
#pragma once

#include "cml/run.hpp"

#include <cuda_runtime_api.h>

namespace ch07 {

// Runs the three copies of the mode on `stream`, prints the device's compute capability,
// the table and each copy's check; false when a copy's result differs from its CPU
// reference. Runs from compute capability 7.0 (the API's floor); LDGSTS needs 8.0.
bool trivially_copyable_mode(const cml::Run& run, cudaStream_t stream);

}  // namespace ch07
