// Chapter 02 — the CUDA Handbook's remark that, unless kernels must run concurrently, the
// chunks' kernels may go to one stream in order and the pipeline still overlaps
// (--mode=kernel-stream): the layouts of equal_chunks.hpp, measured and traced. Program only.
#pragma once

#include "streams.cuh"

#include "cml/run.hpp"

#include <cstddef>

namespace ch02 {

// The pipeline in `chunks` equal chunks in each layout, checked against the CPU, traced
// (what overlapped, how many streams the kernels ran on, how long two kernels ran at once)
// and timed interleaved with the sequential run. False when a result is wrong, or when the
// trace shows a one-stream layout's kernels on more than one stream.
bool kernel_stream(const Problem& p, std::size_t chunks, const cml::Run& run, cudaStream_t stream);

}  // namespace ch02
