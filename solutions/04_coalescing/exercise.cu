// Chapter 04 — global memory coalescing. The solution of chapters/04_coalescing/exercise.cu.
//
//   ./lab run 04 --solution      run the chapter program with this file
//   ./lab diff 04                your exercise.cu against this one
#include "coalescing.cuh"

#include "cml/errors.hpp"

namespace ch04 {

// Step 1. A warp's 32 loads cover 128 consecutive bytes: 4 sectors, all of them used. The
// grid fills every SM with 8 blocks of 256 threads, and each thread keeps four independent
// loads in flight (Little's law: the memory system needs latency x bandwidth bytes in
// flight, a few MiB on an H200, more than one 4-byte load per thread provides). Measured
// on an H200: the plain grid-stride loop reached 0.72 of cudaMemcpy.
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

// Step 2. One 16-byte load per thread moves four times the bytes per instruction, so
// fewer instructions and more bytes in flight per thread (four of them at a time again). cudaMalloc's 256-byte alignment
// makes the float4 view legal; the last n % 4 floats are copied one by one by the first
// threads of the grid.
__global__ void copy_vectorized_kernel(const float* __restrict__ in, float* __restrict__ out, std::size_t n) {
  const std::size_t thread = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x;
  const std::size_t step = static_cast<std::size_t>(gridDim.x) * blockDim.x;
  const std::size_t groups = n / 4;
  const auto* in4 = reinterpret_cast<const float4*>(in);
  auto* out4 = reinterpret_cast<float4*>(out);
  std::size_t i = thread;
  for (; i + (kInFlight - 1) * step < groups; i += kInFlight * step) {
    float4 v[kInFlight];
#pragma unroll
    for (int u = 0; u < kInFlight; ++u) v[u] = in4[i + u * step];
#pragma unroll
    for (int u = 0; u < kInFlight; ++u) out4[i + u * step] = v[u];
  }
  for (; i < groups; i += step) out4[i] = in4[i];
  const std::size_t tail = groups * 4 + thread;
  if (tail < n) out[tail] = in[tail];
}

void copy_vectorized(const float* in, float* out, std::size_t n, cudaStream_t stream) {
  if (n == 0) return;
  copy_vectorized_kernel<<<grid_for((n + 3) / 4), 256, 0, stream>>>(in, out, n);
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
