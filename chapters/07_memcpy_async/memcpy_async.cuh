// Chapter 07 — asynchronous copies from global to shared memory: the API that exercise.cu
// implements (the learner's part, steps 1-4) and what the chapter provides (provided.cu:
// the register-staged kernel every step starts from, a read-only ceiling). main.cu, the
// tests and the solution all include this file; it is host-compatible C++.
//
// The computation, the same for every variant: `in` holds n 32-bit words, cut into tiles
// of kTileWords (4 KiB; the last tile may be shorter). Tile t belongs to block
// t % job.blocks. Each block copies each of its tiles into shared memory and computes on it
// there: every word w of the tile contributes work(w, job.compute) to the block's sum
// (unsigned, modulo 2^32, so any order gives the same bits). Block b writes its sum to
// job.partial[b] (0 when it has no tile). Every function launches job.blocks blocks of
// kThreads threads, only enqueues that one kernel on `stream`, and for n == 0 still writes
// 0 to each partial (job.blocks >= 1 always).
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

#if defined(__CUDACC__)
#define CH07_HD __host__ __device__
#else
#define CH07_HD
#endif

namespace ch07 {

using Word = std::uint32_t;

inline constexpr int kThreads = 256;             // threads per block, every variant
inline constexpr int kTileWords = 1024;          // words per tile: 4 KiB, 4 per thread
inline constexpr int kMaxStages = 4;             // the deepest pipeline of step 3 and 4

// `compute` dependent multiply-adds (a linear congruential step: IMAD in SASS) on one
// word: the knob that moves a variant from copy-bound (0) to compute-bound (64 and more).
CH07_HD inline Word work(Word w, int compute) {
  for (int k = 0; k < compute; ++k) w = w * 1664525u + 1013904223u;
  return w;
}

struct Job {
  const Word* in = nullptr;   // n words, from cudaMalloc (16-byte aligned)
  std::size_t n = 0;
  Word* partial = nullptr;    // blocks words: one sum per block
  int blocks = 1;             // the grid: >= 1
  int compute = 0;            // work() per word: >= 0
  int stages = 1;             // steps 3 and 4: tiles in flight per block, 1..kMaxStages
};

CH07_HD inline std::size_t tile_count(std::size_t n) { return (n + kTileWords - 1) / kTileWords; }

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

// ---- Provided (provided.cu) ---------------------------------------------------------------

// Variant (a), the register-staged reference: each thread loads words into registers,
// stores them to the tile, barrier, compute. What every step starts from.
// Kernel name: sum_sync_kernel.
void sum_sync(const Job& job, cudaStream_t stream);

// The ceiling: a plain vectorised read-only kernel (16-byte loads through the read-only
// path, grid-stride) that computes the same sums straight from registers, no shared
// memory: what reading the array can reach. The same partial sums as the others.
// Kernel name: sum_read_only_kernel.
void sum_read_only(const Job& job, cudaStream_t stream);

}  // namespace ch07
