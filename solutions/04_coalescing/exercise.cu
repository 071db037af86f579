// Chapter 04 — global memory coalescing. The solution of chapters/04_coalescing/exercise.cu.
//
//   ./lab run 04 --solution      run the chapter program with this file
//   ./lab diff 04                your exercise.cu against this one
#include "coalescing.cuh"

#include "cml/errors.hpp"

// Marks this translation unit as the solution: the learner's tests fail when it is linked
// into the learner's build (an exercise.cu that includes or copies this file).
extern "C" const int cml_ch04_solution_tu = 1;

namespace ch04 {

// Step 1. A warp's 32 loads cover 128 consecutive bytes: 4 sectors, all of them used. The
// grid fills every SM with 8 blocks of 256 threads, and each thread keeps four independent
// loads in flight (Little's law: the memory system needs latency x bandwidth bytes in
// flight, a few MiB on an H200, more than one 4-byte load per thread provides). Measured
// on an H200: the plain grid-stride loop reached 0.72 of cudaMemcpy (docs/04_coalescing.md,
// "Bytes in flight").
constexpr int kInFlight = 4;

__global__ void copy_coalesced_kernel(const float* __restrict__ in, float* __restrict__ out, std::size_t n) {
  const std::size_t step = static_cast<std::size_t>(gridDim.x) * blockDim.x;
  std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x;
  for (; i + (kInFlight - 1) * step < n; i += kInFlight * step) {
    float v[kInFlight];
#pragma unroll
    for (int u = 0; u < kInFlight; ++u) v[u] = in[i + u * step];  // all loads issued before any store
#pragma unroll
    for (int u = 0; u < kInFlight; ++u) out[i + u * step] = v[u];
  }
  for (; i < n; i += step) out[i] = in[i];
}

void copy_coalesced(const float* in, float* out, std::size_t n, cudaStream_t stream) {
  if (n == 0) return;
  copy_coalesced_kernel<<<grid_for(n), 256, 0, stream>>>(in, out, n);
  CUDA_CHECK_LAUNCH();
}

// Step 2. One 16-byte load and one 16-byte store per thread (LDG.E.128 / STG.E.128): four
// times the bytes per instruction, and over a grid that covers the array, every load of
// the whole array is issued at once by some thread — the most bytes in flight the GPU
// can hold, with no loop overhead. A probe on the H200: one float4 per thread over a
// covering grid reached cudaMemcpy's speed, which grid-stride float4 loops did not, whatever
// their blocks per SM or loads in flight (docs/04_coalescing.md, "The last few percent").
// A grid-stride loop is as correct; only the speed differs. cudaMalloc's 256-byte
// alignment makes the float4 view legal. Threads past the last group copy the n % 4 floats
// of the tail.
__global__ void copy_vectorized_kernel(const float* __restrict__ in, float* __restrict__ out, std::size_t n) {
  const std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x;
  const std::size_t groups = n / 4;
  if (i < groups) {
    reinterpret_cast<float4*>(out)[i] = reinterpret_cast<const float4*>(in)[i];
  } else {
    const std::size_t tail = groups * 4 + (i - groups);
    if (tail < n) out[tail] = in[tail];
  }
}

void copy_vectorized(const float* in, float* out, std::size_t n, cudaStream_t stream) {
  if (n == 0) return;
  const std::size_t threads = n / 4 + n % 4;         // one per float4, one per tail float
  const std::size_t blocks = (threads + 255) / 256;  // < 2^31 - 1 for any n cudaMalloc can hold
  copy_vectorized_kernel<<<static_cast<unsigned>(blocks), 256, 0, stream>>>(in, out, n);
  CUDA_CHECK_LAUNCH();
}

// Step 3. Each field is its own array: a warp reads 128 consecutive bytes of x, of vx...
// and nothing it does not need. With 64-byte records the same warp pulls 2 KiB of records
// through L1 to use 24 bytes of each.
__global__ void advance_soa_kernel(ParticlesSoA p, std::size_t n, float dt) {
  const std::size_t step = static_cast<std::size_t>(gridDim.x) * blockDim.x;
  for (std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; i < n; i += step) {
    p.x[i] += p.vx[i] * dt;
    p.y[i] += p.vy[i] * dt;
    p.z[i] += p.vz[i] * dt;
  }
}

void advance_soa(ParticlesSoA p, std::size_t n, float dt, cudaStream_t stream) {
  if (n == 0) return;
  advance_soa_kernel<<<grid_for(n), 256, 0, stream>>>(p, n, dt);
  CUDA_CHECK_LAUNCH();
}

// Step 4. Same work, other assignment: thread t takes elements t, t + T, t + 2T, ... so a
// warp's loads are consecutive again.
__global__ void scale_kernel(const float* __restrict__ in, float* __restrict__ out, std::size_t n, float factor) {
  const std::size_t step = static_cast<std::size_t>(gridDim.x) * blockDim.x;
  for (std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; i < n; i += step)
    out[i] = in[i] * factor;
}

void scale(const float* in, float* out, std::size_t n, float factor, cudaStream_t stream) {
  if (n == 0) return;
  scale_kernel<<<grid_for(n), 256, 0, stream>>>(in, out, n, factor);
  CUDA_CHECK_LAUNCH();
}

}  // namespace ch04
