// Chapter 02 — --mode=graph: the staged pipeline captured once into a CUDA graph and launched
// whole, against issuing it call by call, at the plan's chunk count and at 2x and 4x as many
// (docs/02, "A CUDA graph of the pipeline"). The question: is the per-chunk cost that holds
// the plan below the contention-aware bound the host's issuing, which a graph removes, or the
// GPU's own cost per operation, which it keeps? Program only.
#pragma once

#include "harness.hpp"
#include "streams.cuh"

#include "cml/run.hpp"

#include <vector>

namespace ch02 {

// Each chunk count: your run_staged captured on `streams` (forked from and joined to
// `stream`), checked against the CPU, then sequential, staged and the graph timed
// interleaved. False when a result is wrong or the capture fails (a call in run_staged that
// a graph cannot hold: the line says which error).
bool graph_mode(const Problem& p, const Plan& plan, const Phases& copies, const std::vector<cudaStream_t>& streams,
                const cml::Run& run, cudaStream_t stream);

}  // namespace ch02
