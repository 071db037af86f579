// Chapter 01 — what CUDA and the CUPTI trace say about the learner's memory and copies, printed
// by the program beside its measurements, so a number comes with the mechanism behind it.
// Program only, in program/ (the tests assert the same facts in their own terms).
#pragma once

#include "harness.hpp"

#include "cml/device.hpp"
#include "cml/run.hpp"

#include <cuda_runtime_api.h>

namespace ch01 {

// What CUDA says a pointer is: "pinned" (page-locked host memory), "device", "managed" or
// "pageable".
const char* pointer_kind(const void* p);

// Whether kernels can read plain malloc memory on this GPU, and what CUDA calls such memory.
void print_host_access(const cml::DeviceFacts& facts);

// Runs send_batched under the CUPTI trace and prints how many copies and kernels it issued
// (or why the trace is unavailable); with --out, writes the trace as timeline_send_batched.csv.
void print_send_batched_trace(const PieceSet& set, cudaStream_t stream, const cml::Run& run);

}  // namespace ch01
