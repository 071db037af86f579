// Chapter 08 — the kernels of --mode=entangled's second table (program/entangled_arrivals.cu):
// what a diverged arrive-on costs. The source notes (the CUDA guide on memcpy_async, for
// compute capability 8.x) say an arrive-on operation (cp.async.mbarrier.arrive) updates the
// barrier once for a converged warp and once per diverged part of it: 32 updates for a fully
// diverged warp. These kernels copy a tile with one 16-byte cp.async per thread and make
// each thread's arrival converged, in two half-warp branches, one lane at a time, or in two
// branches reconverged by __syncwarp before one arrival; then they time until the barrier's
// phase completes. Host-compatible.
#pragma once

#include "pieces.hpp"

#include <cuda_runtime_api.h>

#include <cstddef>
#include <vector>

namespace ch08 {

// How the lanes of a warp make their arrive-on operation.
enum class Arrival {
  converged,    // every lane in the same instruction
  halves,       // lanes 0-15 in one branch, lanes 16-31 in the other
  lanes,        // one lane at a time: 32 arrivals a warp
  reconverged,  // the copies in two branches, then __syncwarp() and one arrival
};

struct ArrivalKind {
  Arrival arrival;
  const char* name;    // as the table prints it
  const char* kernel;  // the kernel's demangled name in SASS
};
const std::vector<ArrivalKind>& arrival_kinds();

// out[p] = in[p] for p < pieces, one tile of 256 pieces per block and round: thread t
// copies piece t of the tile with one 16-byte cp.async.cg, then makes its arrive-on
// (cp.async.mbarrier.arrive.noinc) on the block's barrier (256 arrivals a phase) as
// k.arrival says; from the clock64 read before the arrival to the phase's completion, the
// cycles are added to cycles[block * 256 + t] (written, not added to). Every thread arrives
// every round, with a copy or not. Only enqueues.
void copy_arrivals(const ArrivalKind& k, const Piece* in, std::size_t pieces, Piece* out, unsigned long long* cycles,
                   int blocks, cudaStream_t stream);

}  // namespace ch08
