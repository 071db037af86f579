// Chapter 02 — --mode=host-overlap: the host's own work done while the staged pipeline runs,
// the first way the Best Practices Guide gives of overlapping with asynchronous copies
// (docs/02, "Other ways to overlap"). The host work is real: the CPU reference
// of as many outputs as take about as long as the pipeline. Program only.
#pragma once

#include "harness.hpp"
#include "streams.cuh"

#include "cml/run.hpp"

#include <vector>

namespace ch02 {

// Times, interleaved on the host's clock: your run_staged then a wait then the host work; the
// same with the host work between the enqueue and the wait; and that again from pageable
// buffers (whose copies hold the host until they are staged). Each pipeline's output is
// checked against the host work's own result. False when a result is wrong.
bool host_overlap_mode(const Problem& p, const Plan& plan, const std::vector<cudaStream_t>& streams,
                       const cml::Run& run, cudaStream_t stream);

}  // namespace ch02
