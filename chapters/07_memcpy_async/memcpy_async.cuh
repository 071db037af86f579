// Chapter 07 — asynchronous copies from global to shared memory: the API that exercise.cu
// implements (the learner's part, steps 1-4) and what the chapter provides (provided.cu:
// the register-staged kernel every step starts from). main.cu, the tests and the solution
// all include this file; it is host-compatible C++.
//
// The computation is the tiled sum of cml/tile_sum.cuh, which chapter 08 runs too: `in`
// holds n 32-bit words cut into tiles of kTileWords (4 KiB; the last tile may be shorter);
// tile t belongs to block t % job.blocks, which copies it into shared memory and adds
// work(w, job.compute) for each of its words to its sum, written to job.partial[b] (0 when
// it has no tile). On the device you may call that header's tile_span, compute_tile,
// finish_block and sum_through_registers. Every function launches job.blocks blocks of
// kThreads threads, only enqueues that one kernel on `stream`, for n == 0 still writes 0 to
// each partial (job.blocks >= 1 always), and reads nothing past in[n - 1]: the short last
// tile is count words long, and a tile past the last one is not there.
#pragma once

#include "cml/tile_sum.cuh"

#include <cuda_runtime_api.h>

namespace ch07 {

using cml::tile_sum::Job;
using cml::tile_sum::kMaxStages;  // 4: the deepest pipeline of steps 3 and 4
using cml::tile_sum::kThreads;    // 256 threads per block, every variant
using cml::tile_sum::kTileWords;  // 1024 words per tile: 4 KiB, 4 per thread
using cml::tile_sum::tile_count;
using cml::tile_sum::Word;
using cml::tile_sum::work;
#if defined(__CUDACC__)
using cml::tile_sum::compute_tile;
using cml::tile_sum::finish_block;
using cml::tile_sum::sum_through_registers;
using cml::tile_sum::tile_span;
using cml::tile_sum::TileSpan;
#endif

// ---- Step 1: cooperative_groups::memcpy_async ------------------------------------------
// The block copies each tile into shared memory with one collective asynchronous copy
// (no word passes through a register of the kernel) and waits for it before computing.
// SASS: LDGSTS. Kernel name: sum_cg_kernel.
void sum_cg(const Job& job, cudaStream_t stream);

// ---- Step 2: cuda::memcpy_async completing on a cuda::barrier ---------------------------
// The same copy, its completion tracked by a block-scope cuda::barrier in shared memory.
// SASS: LDGSTS (or UBLKCP). Kernel name: sum_barrier_kernel.
void sum_barrier(const Job& job, cudaStream_t stream);

// ---- Step 3: a multi-stage cuda::pipeline -----------------------------------------------
// job.stages (1..kMaxStages; std::invalid_argument otherwise) tiles in flight per block:
// while the block computes on one tile, the copies of its next stages - 1 tiles run.
// stages == 1 is the single-stage pipeline. SASS: LDGSTS. Kernel name: sum_pipeline_kernel.
void sum_pipeline(const Job& job, cudaStream_t stream);

// ---- Step 4: the fast path ----------------------------------------------------------------
// Step 3's pipeline whose copies move 16 bytes each, bypassing L1 (SASS:
// LDGSTS.E.BYPASS.128, or a bulk copy UBLKCP), for any n (a tile's last 1-3 words are
// not a 16-byte piece), never reading past in[n - 1]. Kernel name: sum_fast_kernel.
void sum_fast(const Job& job, cudaStream_t stream);

// ---- Provided ------------------------------------------------------------------------------

// Variant (a), the register-staged reference (provided.cu): each thread loads words into
// registers, stores them to the tile, barrier, compute. What every step starts from.
// Kernel name: sum_sync_kernel.
void sum_sync(const Job& job, cudaStream_t stream);

// The ceiling (cml/tile_sum.cuh): a plain vectorised read-only kernel that computes the
// same sums straight from registers, no shared memory: what reading the array can reach.
using cml::tile_sum::sum_read_only;

}  // namespace ch07
