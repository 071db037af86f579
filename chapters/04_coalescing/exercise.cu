// Chapter 04 — global memory coalescing. THE file you edit: four steps, TODO(1) to
// TODO(4). Steps 1, 2 and 4 work as shipped, but touch memory the slow way; step 3's update
// is yours to write. Keep the kernels' names: the tests find them in the compiled code.
//
//   ./lab run 04            measure your kernels against cudaMemcpy and the sector model
//   ./lab check 04          the chapter's tests: which steps pass, and why not
//   ./lab hint 04           one more hint (chapters/04_coalescing/hints.md)
//
// Every function is declared, with what it must do, in coalescing.cuh.
#include "coalescing.cuh"

#include "cml/errors.hpp"

namespace ch04 {

// TODO(1): copy all n floats at the speed of the memory system. Consecutive threads must
// touch consecutive floats, every SM must have work, and one load per thread at a time is
// not enough bytes in flight to hide DRAM's latency: the test holds your copy to the
// chapter's plain one-float-per-thread loop (offset_copy at offset 0), measured in the same
// run, and wants it clearly faster. Any n, including sizes far above one pass of the grid.
__global__ void copy_coalesced_kernel(const float* __restrict__ in, float* __restrict__ out, std::size_t n) {
  for (std::size_t i = threadIdx.x; i < n; i += blockDim.x) out[i] = in[i];
}

void copy_coalesced(const float* in, float* out, std::size_t n, cudaStream_t stream) {
  if (n == 0) return;
  copy_coalesced_kernel<<<1, 256, 0, stream>>>(in, out, n);
  CUDA_CHECK_LAUNCH();
}

// TODO(2): the same copy, moving 16 bytes per load and per store instruction (the tests
// read the compiled kernel: LDG.E.128 and STG.E.128), correct for every n, also when n is
// not a multiple of 4 and when n is far above what one pass of your grid covers. in and out
// come from cudaMalloc. Choose the grid within the rule at the top of coalescing.cuh (the
// work items: the n / 4 groups, plus the tail); say in a comment why.
__global__ void copy_vectorized_kernel(const float* __restrict__ in, float* __restrict__ out, std::size_t n) {
  const std::size_t step = static_cast<std::size_t>(gridDim.x) * blockDim.x;
  for (std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; i < n; i += step)
    out[i] = in[i];
}

void copy_vectorized(const float* in, float* out, std::size_t n, cudaStream_t stream) {
  if (n == 0) return;
  copy_vectorized_kernel<<<grid_for(n), 256, 0, stream>>>(in, out, n);
  CUDA_CHECK_LAUNCH();
}

// TODO(3): the particles' update, over arrays instead of records. The records version is
// given: advance_aos_kernel in provided.cu moves each particle by its velocity times dt,
// reading whole 64-byte Particle records. Write the same update over ParticlesSoA (one
// array per field, coalescing.cuh) so that a warp reads only the bytes it uses, for any n,
// and runs well clear of the records version's time; and launch it, with a grid that
// follows the rule at the top of coalescing.cuh (the work items: the n particles).
__global__ void advance_soa_kernel([[maybe_unused]] ParticlesSoA p, [[maybe_unused]] std::size_t n,
                                   [[maybe_unused]] float dt) {}

void advance_soa([[maybe_unused]] ParticlesSoA p, [[maybe_unused]] std::size_t n, [[maybe_unused]] float dt,
                 [[maybe_unused]] cudaStream_t stream) {}

// TODO(4): as shipped, each thread scales its own run of 32 consecutive floats, so a warp's
// loads land 128 bytes apart. Measure what a warp's request costs (./lab run 04, the sector
// model in docs/04) and change which thread reads what, so that scale runs as fast as the
// chapter's plain coalesced copy over the same bytes and Nsight Compute counts about 4
// sectors per request. The grid follows the rule at the top of coalescing.cuh, with the n
// floats as the work items (the launch below sizes it for runs of 32).
constexpr std::size_t kRun = 32;

__global__ void scale_kernel(const float* __restrict__ in, float* __restrict__ out, std::size_t n, float factor) {
  const std::size_t thread = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x;
  const std::size_t threads = static_cast<std::size_t>(gridDim.x) * blockDim.x;
  for (std::size_t first = thread * kRun; first < n; first += threads * kRun)
    for (std::size_t i = first; i < first + kRun && i < n; ++i) out[i] = in[i] * factor;
}

void scale(const float* in, float* out, std::size_t n, float factor, cudaStream_t stream) {
  if (n == 0) return;
  scale_kernel<<<grid_for((n + kRun - 1) / kRun), 256, 0, stream>>>(in, out, n, factor);
  CUDA_CHECK_LAUNCH();
}

}  // namespace ch04
