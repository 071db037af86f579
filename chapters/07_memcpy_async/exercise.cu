// Chapter 07 — asynchronous copies from global to shared memory. THE file you edit: four
// steps, TODO(1) to TODO(4). Every function works as shipped: each kernel runs the
// register-staged body (sum_through_registers, from cml/tile_sum.cuh), correct and
// synchronous. Keep the kernels' names: the tests find them by name in the compiled code.
//
//   ./lab run 07                         every variant against the CPU, timed beside a read-only kernel
//   ./lab run 07 -- --mode=shmoo         stages x compute x blocks per SM, for the plot
//   ./lab check 07                       the chapter's tests: which steps pass, and why not
//   ./lab hint 07                        one more hint (chapters/07_memcpy_async/hints.md)
//
// What each function must do is in memcpy_async.cuh (Job, tiles, kTileWords, kThreads);
// what you may call on the device, the workload chapter 08 shares, is in
// common/cml/tile_sum.cuh (tile_span, compute_tile, finish_block).
#include "memcpy_async.cuh"

#include "cml/errors.hpp"

#include <cooperative_groups.h>
#include <cooperative_groups/memcpy_async.h>
#include <cuda/barrier>
#include <cuda/pipeline>

#include <stdexcept>
#include <string>

namespace cg = cooperative_groups;

namespace ch07 {

// TODO(1): the tile must reach shared memory without passing through this kernel's
// registers: the block copies each tile with one asynchronous copy that all its threads
// take part in, and no thread computes on the tile before every word of it has landed.
// Constraints: any n (the last tile is short), the tile's words are read by other
// threads than the ones that copied them, and the next tile's copy may not overwrite
// words another thread is still reading. Start from sum_through_registers (cml/tile_sum.cuh).
__global__ void __launch_bounds__(kThreads) sum_cg_kernel(const Job job) { sum_through_registers(job); }

void sum_cg(const Job& job, cudaStream_t stream) {
  sum_cg_kernel<<<job.blocks, kThreads, 0, stream>>>(job);
  CUDA_CHECK_LAUNCH();
}

// TODO(2): the same asynchronous copy, but its completion is tracked by a barrier object
// that lives in shared memory and that every thread of the block arrives at: the copy
// counts as part of the barrier's phase, so the phase ends only when all threads have
// arrived AND the tile has landed. Constraints: the barrier is set up once, by one
// thread, before anyone uses it; every thread arrives in every phase (a thread that skips
// an arrival - say, one with no word in the short last tile - leaves the block waiting for
// ever). nvcc warns about a __shared__ object with a constructor: silence that one
// diagnostic for that one declaration (hints.md says how), keep every other warning.
__global__ void __launch_bounds__(kThreads) sum_barrier_kernel(const Job job) { sum_through_registers(job); }

void sum_barrier(const Job& job, cudaStream_t stream) {
  sum_barrier_kernel<<<job.blocks, kThreads, 0, stream>>>(job);
  CUDA_CHECK_LAUNCH();
}

// TODO(3): overlap the copy of the next tiles with the compute on this one: job.stages
// buffers of one tile each in shared memory (sized at launch), and while the block computes
// on its k-th tile, the copies of tiles k + 1 .. k + stages - 1 are already in flight.
// Constraints: a buffer is refilled only after every thread has finished reading it; a
// thread computes on a tile only when all of it has landed (its own copies and the other
// threads'); no two tiles in flight at once share a buffer, for every stages from 1 to
// kMaxStages, including 3, which is not a power of two; any n, including tile counts that
// are not a multiple of stages. stages == 1 is the single-stage pipeline.
__global__ void __launch_bounds__(kThreads) sum_pipeline_kernel(const Job job) { sum_through_registers(job); }

void sum_pipeline(const Job& job, cudaStream_t stream) {
  if (job.stages < 1 || job.stages > kMaxStages)
    throw std::invalid_argument("sum_pipeline: stages must be 1 to " + std::to_string(kMaxStages));
  sum_pipeline_kernel<<<job.blocks, kThreads, 0, stream>>>(job);
  CUDA_CHECK_LAUNCH();
}

// TODO(4): step 3's pipeline on the fast path: every copy of a whole 16-byte piece must
// move those 16 bytes in one instruction that bypasses L1 (SASS: LDGSTS.E.BYPASS.128; a
// bulk copy, UBLKCP, counts too). The library picks that instruction only when it can
// prove at compile time that both addresses and the size are 16-byte aligned. Constraints:
// any n: where the array ends inside a 16-byte piece, no copy may read past in[n - 1].
__global__ void __launch_bounds__(kThreads) sum_fast_kernel(const Job job) { sum_through_registers(job); }

void sum_fast(const Job& job, cudaStream_t stream) {
  if (job.stages < 1 || job.stages > kMaxStages)
    throw std::invalid_argument("sum_fast: stages must be 1 to " + std::to_string(kMaxStages));
  sum_fast_kernel<<<job.blocks, kThreads, 0, stream>>>(job);
  CUDA_CHECK_LAUNCH();
}

}  // namespace ch07
