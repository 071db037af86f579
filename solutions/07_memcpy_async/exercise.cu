// Chapter 07 — asynchronous copies to shared memory, solved. The same file as
// chapters/07_memcpy_async/exercise.cu with every TODO done; the comments say why.
//
//   ./lab run 07 --solution          the chapter's program with this file
//   ./lab diff 07                    your file against this one (spoils the chapter)
#include "memcpy_async.cuh"

#include "cml/errors.hpp"

#include <cooperative_groups.h>
#include <cooperative_groups/memcpy_async.h>
#include <cuda/barrier>
#include <cuda/pipeline>

#include <stdexcept>
#include <string>

namespace cg = cooperative_groups;

// The solution's marker: the tests refuse a learner's build that contains this file.
extern "C" const int cml_ch07_solution_tu = 1;

namespace ch07 {

// ---- Step 1 ---------------------------------------------------------------------------------

// One collective copy per tile: the group's threads share the tile's words among them
// and no word passes through a register. cg::wait makes the whole group wait for all of
// the tile, so after it any thread may read any word. The copy of Word* (4-byte aligned)
// becomes 4-byte LDGSTS.E; nothing overlaps the compute yet (one tile in flight).
__global__ void __launch_bounds__(kThreads) sum_cg_kernel(const Job job) {
  __shared__ alignas(16) Word tile[kTileWords];
  const cg::thread_block block = cg::this_thread_block();
  const std::size_t tiles = tile_count(job.n);
  Word acc = 0;
  for (std::size_t t = blockIdx.x; t < tiles; t += gridDim.x) {
    const TileSpan s = tile_span(job, t);
    cg::memcpy_async(block, tile, job.in + s.first, sizeof(Word) * s.count);
    cg::wait(block);
    acc = compute_tile(tile, s.count, job.compute, acc);
    // The next tile's copy overwrites words other threads may still be reading.
    block.sync();
  }
  finish_block(acc, job.partial);
}

void sum_cg(const Job& job, cudaStream_t stream) {
  sum_cg_kernel<<<job.blocks, kThreads, 0, stream>>>(job);
  CUDA_CHECK_LAUNCH();
}

// ---- Step 2 ---------------------------------------------------------------------------------

// The copy completes on a block-scope cuda::barrier: memcpy_async adds the copy to the
// barrier's current phase, and arrive_and_wait returns when every thread has arrived AND
// the copies have landed. The barrier lives in shared memory and is initialised once, by
// one thread, before any thread uses it (hence the block.sync after init).
__global__ void __launch_bounds__(kThreads) sum_barrier_kernel(const Job job) {
  __shared__ alignas(16) Word tile[kTileWords];
  // cuda::barrier has a constructor, so nvcc warns (#20054) that a __shared__ one is not
  // initialised by it: that is the point, init() below does it. Suppressed for this one
  // declaration only; every other warning stays an error.
#pragma nv_diag_suppress static_var_with_dynamic_init
  __shared__ cuda::barrier<cuda::thread_scope_block> bar;
#pragma nv_diag_default static_var_with_dynamic_init
  const cg::thread_block block = cg::this_thread_block();
  if (block.thread_rank() == 0) init(&bar, block.size());
  block.sync();
  const std::size_t tiles = tile_count(job.n);
  Word acc = 0;
  for (std::size_t t = blockIdx.x; t < tiles; t += gridDim.x) {
    const TileSpan s = tile_span(job, t);
    cuda::memcpy_async(block, tile, job.in + s.first, sizeof(Word) * s.count, bar);
    // Every thread arrives, even one with no word in a short last tile: a barrier counts
    // arrivals, and one missing arrival leaves the whole block waiting for ever.
    bar.arrive_and_wait();
    acc = compute_tile(tile, s.count, job.compute, acc);
    block.sync();
  }
  finish_block(acc, job.partial);
}

void sum_barrier(const Job& job, cudaStream_t stream) {
  sum_barrier_kernel<<<job.blocks, kThreads, 0, stream>>>(job);
  CUDA_CHECK_LAUNCH();
}

// ---- Steps 3 and 4: the pipeline --------------------------------------------------------------

namespace {

// This thread's share of a tile's copy: words i, i + 256, ... (4-byte copies), or, on the
// fast path, the 16-byte piece of words 4t .. 4t + 3 when it is whole (one
// LDGSTS.E.BYPASS.128: 16-byte aligned on both sides, since tiles start at multiples of
// 4 KiB and `in` comes from cudaMalloc) and its 1-3 words one by one when the array ends
// inside it: a 16-byte copy there would read past in[n - 1]. A whole tile, the common
// case, takes a loop of known length (unrolled: no loop test, no 64-bit compare per word);
// only the short last tile takes the loop bounded by `count`.
template <bool Fast>
__device__ __forceinline__ void copy_share(Word* dst, const Word* src, int count,
                                           cuda::pipeline<cuda::thread_scope_thread>& pipe) {
  if constexpr (Fast) {
    const int first = 4 * static_cast<int>(threadIdx.x);
    if (first + 4 <= count) {
      cuda::memcpy_async(dst + first, src + first, cuda::aligned_size_t<16>(16), pipe);
    } else {
      for (int i = first; i < count; ++i) cuda::memcpy_async(dst + i, src + i, sizeof(Word), pipe);
    }
  } else if (count == kTileWords) {
#pragma unroll
    for (int q = 0; q < kTileWords / kThreads; ++q) {
      const int i = static_cast<int>(threadIdx.x) + q * kThreads;
      cuda::memcpy_async(dst + i, src + i, sizeof(Word), pipe);
    }
  } else {
    for (int i = static_cast<int>(threadIdx.x); i < count; i += kThreads)
      cuda::memcpy_async(dst + i, src + i, sizeof(Word), pipe);
  }
}

// The buffer after `slot`, wrapping at `stages`. The k-th tile lives in buffer k % stages,
// but k is 64-bit: k % stages in the loop is a 64-bit division per tile, dozens of
// instructions for a loop that moves 16 bytes per thread (it cost 10-25 % of the
// bandwidth on the H100). Two counters that wrap give the same buffers for nothing.
__device__ __forceinline__ int next_slot(int slot, int stages) { return slot + 1 == stages ? 0 : slot + 1; }

// A thread-scope pipeline (cuda::make_pipeline: each thread's own cp.async groups) and a
// __syncthreads after the wait, rather than the guide's block-scope pipeline with
// pipeline_shared_state: the wait only covers this thread's copies, the barrier makes the
// other threads' copies visible too. compute-sanitizer's synccheck reports "Missing wait"
// at producer_commit for the block-scope form; this one is clean.
//
// The k-th tile of this block (tile blockIdx.x + k * gridDim.x) goes to stage k % stages.
// Before computing on tile k the block has committed the copies of tiles k .. k + stages - 1,
// so stages - 1 tiles are in flight while it computes.
template <bool Fast>
__device__ __forceinline__ void sum_pipelined(const Job& job) {
  extern __shared__ __align__(16) Word stage_buf[];  // job.stages tiles
  cuda::pipeline<cuda::thread_scope_thread> pipe = cuda::make_pipeline();
  const std::size_t tiles = tile_count(job.n);
  const int stages = job.stages;
  int fill = 0;  // the buffer the next fetch writes: tile k's, k % stages
  int use = 0;   // the buffer of the tile computed on next
  // Every thread commits once per call, with or without a tile to copy, so that the
  // count of committed stages is the same in every thread and consumer_wait (wait for all
  // but the newest stages - 1 stages) always means "tile k has landed".
  const auto fetch = [&](std::size_t k) {
    pipe.producer_acquire();
    const std::size_t t = blockIdx.x + k * gridDim.x;
    if (t < tiles) {
      const TileSpan s = tile_span(job, t);
      copy_share<Fast>(stage_buf + fill * kTileWords, job.in + s.first, s.count, pipe);
    }
    fill = next_slot(fill, stages);
    // The short last tile sends the lanes of a warp down different branches above. Commits
    // are entangled per warp: converged lanes commit as one, diverged lanes each advance
    // the warp's shared sequence, and later waits then wait for more than they need.
    __syncwarp();
    pipe.producer_commit();
  };
  for (int k = 0; k + 1 < stages; ++k) fetch(k);
  Word acc = 0;
  for (std::size_t k = 0, t = blockIdx.x; t < tiles; ++k, t += gridDim.x) {
    // The buffer refilled here was last read in iteration k - 1, behind its closing barrier.
    fetch(k + stages - 1);
    pipe.consumer_wait();  // this thread's copies of tile k have landed...
    __syncthreads();       // ...and every other thread's too
    acc = compute_tile(stage_buf + use * kTileWords, tile_span(job, t).count, job.compute, acc);
    use = next_slot(use, stages);
    __syncthreads();  // every thread is done with this buffer before it is refilled
    pipe.consumer_release();
  }
  finish_block(acc, job.partial);
}

void check_stages(const Job& job, const char* what) {
  if (job.stages < 1 || job.stages > kMaxStages)
    throw std::invalid_argument(std::string(what) + ": stages must be 1 to " + std::to_string(kMaxStages));
}

}  // namespace

__global__ void __launch_bounds__(kThreads) sum_pipeline_kernel(const Job job) { sum_pipelined<false>(job); }

void sum_pipeline(const Job& job, cudaStream_t stream) {
  check_stages(job, "sum_pipeline");
  const std::size_t shared = static_cast<std::size_t>(job.stages) * kTileWords * sizeof(Word);
  sum_pipeline_kernel<<<job.blocks, kThreads, shared, stream>>>(job);
  CUDA_CHECK_LAUNCH();
}

// ---- Step 4 ---------------------------------------------------------------------------------

// The same pipeline whose copies say they move 16-byte aligned 16-byte pieces
// (cuda::aligned_size_t<16>): the library then emits cp.async.cg, 16 bytes, L1 bypassed
// (LDGSTS.E.BYPASS.128), a quarter of the instructions of 4-byte copies. One tile per
// stage, as step 3; docs/07_memcpy_async.md ("Several tiles per stage") measures what
// putting more tiles behind each wait and barrier changes.
__global__ void __launch_bounds__(kThreads) sum_fast_kernel(const Job job) { sum_pipelined<true>(job); }

void sum_fast(const Job& job, cudaStream_t stream) {
  check_stages(job, "sum_fast");
  const std::size_t shared = static_cast<std::size_t>(job.stages) * kTileWords * sizeof(Word);
  sum_fast_kernel<<<job.blocks, kThreads, shared, stream>>>(job);
  CUDA_CHECK_LAUNCH();
}

}  // namespace ch07
