// Chapter 04 — global memory coalescing. THE file you edit: four steps, TODO(1) to
// TODO(4). Every function works as shipped, but touches memory the slow way. Keep the
// kernels' names: the tests find them by name in the compiled code.
//
//   ./lab run 04            measure your kernels against cudaMemcpy and the sector model
//   ./lab check 04          the chapter's tests: which steps pass, and why not
//   ./lab hint 04           one more hint (chapters/04_coalescing/hints.md)
//
// Every function is declared, with what it must do, in coalescing.cuh.
#include "coalescing.cuh"

#include "cml/errors.hpp"

namespace ch04 {

// TODO(1): one block cannot keep the memory system busy: launch grid_for(n) blocks of 256
// threads and let each thread step through the array by the whole grid's width
// (i += gridDim.x * blockDim.x), so consecutive threads always touch consecutive floats.
// Then keep several loads in flight per thread: load four elements one grid-width apart
// before storing any (one 4-byte load per thread leaves the H200 near 0.72 of cudaMemcpy).
__global__ void copy_coalesced_kernel(const float* __restrict__ in, float* __restrict__ out, std::size_t n) {
  for (std::size_t i = threadIdx.x; i < n; i += blockDim.x) out[i] = in[i];
}

void copy_coalesced(const float* in, float* out, std::size_t n, cudaStream_t stream) {
  if (n == 0) return;
  copy_coalesced_kernel<<<1, 256, 0, stream>>>(in, out, n);
  CUDA_CHECK_LAUNCH();
}

// TODO(2): move 16 bytes per thread per step: reinterpret in and out as float4 for the
// first n / 4 groups, then copy the last n % 4 floats one by one. The compiled kernel must
// load with LDG.E.128.
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

// TODO(3): the structure-of-arrays update: x[i] += vx[i] * dt, and y, z likewise, with a
// grid-stride loop over grid_for(n) blocks. As shipped it runs on one block.
__global__ void advance_soa_kernel(ParticlesSoA p, std::size_t n, float dt) {
  for (std::size_t i = threadIdx.x; i < n; i += blockDim.x) {
    p.x[i] += p.vx[i] * dt;
    p.y[i] += p.vy[i] * dt;
    p.z[i] += p.vz[i] * dt;
  }
}

void advance_soa(ParticlesSoA p, std::size_t n, float dt, cudaStream_t stream) {
  if (n == 0) return;
  advance_soa_kernel<<<1, 256, 0, stream>>>(p, n, dt);
  CUDA_CHECK_LAUNCH();
}

// TODO(4): each thread scales its own run of 32 consecutive floats, so at every step a
// warp's loads are 128 bytes apart: 32 sectors per request where 4 would do. Change which
// thread reads what: consecutive threads, consecutive elements (a grid-stride loop).
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
