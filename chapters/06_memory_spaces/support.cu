// Chapter 06 — what the chapter provides beside your steps: the comparisons each step is
// measured against (a ring buffer in local memory, register caps that force spills, the
// divergent constant read and its global / read-only twins, a hand-written bilinear
// rotation). Read them after the step: ./lab run 06 times them beside yours.
#include "memory_spaces.cuh"

#include "cml/errors.hpp"

#include <cmath>
#include <cstdint>

namespace ch06 {

dim3 fir_grid(int rows, int cols) {
  return dim3(static_cast<unsigned>((cols + kFirBlock - 1) / kFirBlock),
              static_cast<unsigned>((rows + kSegment - 1) / kSegment));
}

dim3 rotate_grid(int width, int height) {
  return dim3(static_cast<unsigned>((width + kRotateBlockX - 1) / kRotateBlockX),
              static_cast<unsigned>((height + kRotateBlockY - 1) / kRotateBlockY));
}

void rotation_cos_sin(float angle, float& c, float& s) {
  c = std::cos(angle);
  s = std::sin(angle);
}

// ---- Step 1's comparisons ---------------------------------------------------------------

// window[r % kTaps]: an index known only at run time. Registers cannot be indexed, so the
// array lives in the thread's stack frame, in local memory (device memory, cached in L1).
__global__ void fir_ring_kernel(const float* __restrict__ in, float* __restrict__ out, int rows, int cols,
                                Taps taps) {
  const int c = blockIdx.x * kFirBlock + threadIdx.x;
  const int r0 = blockIdx.y * kSegment;
  if (c >= cols) return;
  float window[kTaps];
  for (int k = 0; k < kTaps; ++k) window[k] = 0.f;
  const int end = min(rows, r0 + kSegment);
  for (int r = max(0, r0 - (kTaps - 1)); r < end; ++r) {
    window[r % kTaps] = in[static_cast<std::size_t>(r) * cols + c];
    if (r < r0) continue;
    float acc = 0.f;
#pragma unroll
    for (int k = 0; k < kTaps; ++k) acc += taps.w[k] * window[(r - k + kTaps) % kTaps];
    out[static_cast<std::size_t>(r) * cols + c] = acc;
  }
}

void fir_ring(const float* in, float* out, int rows, int cols, const Taps& taps, cudaStream_t stream) {
  if (rows <= 0 || cols <= 0) return;
  fir_ring_kernel<<<fir_grid(rows, cols), kFirBlock, 0, stream>>>(in, out, rows, cols, taps);
  CUDA_CHECK_LAUNCH();
}

// The row loop unrolled by kTaps: inside one round the ring's slot (j) is a constant, so the
// window can live in registers. Then ask for fewer registers than it needs.
__device__ __forceinline__ void fir_unrolled(const float* __restrict__ in, float* __restrict__ out, int rows, int cols,
                                             const Taps& taps) {
  const int c = blockIdx.x * kFirBlock + threadIdx.x;
  const int r0 = blockIdx.y * kSegment;
  if (c >= cols) return;
  float window[kTaps];
#pragma unroll
  for (int k = 0; k < kTaps; ++k) window[k] = 0.f;
  const int end = min(rows, r0 + kSegment);
  // Start at a multiple of kTaps, so row r is in slot r % kTaps = j.
  for (int base = max(0, r0 - kTaps); base < end; base += kTaps) {
#pragma unroll
    for (int j = 0; j < kTaps; ++j) {
      const int r = base + j;
      if (r < end) {
        window[j] = in[static_cast<std::size_t>(r) * cols + c];
        if (r >= r0) {
          float acc = 0.f;
#pragma unroll
          for (int k = 0; k < kTaps; ++k) acc += taps.w[k] * window[(j - k + kTaps) % kTaps];
          out[static_cast<std::size_t>(r) * cols + c] = acc;
        }
      }
    }
  }
}

__global__ void __launch_bounds__(256, 8)
    fir_capped_kernel(const float* __restrict__ in, float* __restrict__ out, int rows, int cols, Taps taps) {
  fir_unrolled(in, out, rows, cols, taps);
}

// CUDA 13: ptxas may spill to shared memory instead of local memory, for a kernel with
// __launch_bounds__ (so it knows how many threads share the block's shared memory).
__global__ void __launch_bounds__(256, 8)
    fir_smem_spill_kernel(const float* __restrict__ in, float* __restrict__ out, int rows, int cols, Taps taps) {
  asm volatile(".pragma \"enable_smem_spilling\";");
  fir_unrolled(in, out, rows, cols, taps);
}

void fir_capped(const float* in, float* out, int rows, int cols, const Taps& taps, cudaStream_t stream) {
  if (rows <= 0 || cols <= 0) return;
  fir_capped_kernel<<<fir_grid(rows, cols), kFirBlock, 0, stream>>>(in, out, rows, cols, taps);
  CUDA_CHECK_LAUNCH();
}

void fir_smem_spill(const float* in, float* out, int rows, int cols, const Taps& taps, cudaStream_t stream) {
  if (rows <= 0 || cols <= 0) return;
  fir_smem_spill_kernel<<<fir_grid(rows, cols), kFirBlock, 0, stream>>>(in, out, rows, cols, taps);
  CUDA_CHECK_LAUNCH();
}

// ---- Step 2's comparisons ---------------------------------------------------------------

__constant__ float c_mix_divergent[kChannels * kChannels];

void set_mix_divergent(const float* matrix) {
  CUDA_CHECK(cudaMemcpyToSymbol(c_mix_divergent, matrix, sizeof(c_mix_divergent)));
}

constexpr int kMixBlock = 256;

// One thread per output value: pixel p = t / 16, row r = t % 16. A warp's 32 lanes hold 16
// different r at once, so each read of M is 16 addresses: the constant cache serves one
// address at a time (LDC R, c[0x3][R] in SASS).
__global__ void mix_divergent_kernel(const float* __restrict__ in, float* __restrict__ out, int n) {
  const std::int64_t t = static_cast<std::int64_t>(blockIdx.x) * kMixBlock + threadIdx.x;
  const std::int64_t p = t / kChannels;
  const int r = static_cast<int>(t % kChannels);
  if (p >= n) return;
  float acc = 0.f;
#pragma unroll
  for (int c = 0; c < kChannels; ++c) acc += c_mix_divergent[r * kChannels + c] * in[c * static_cast<std::size_t>(n) + p];
  out[r * static_cast<std::size_t>(n) + p] = acc;
}

// The same reads of M from global memory. No pointer is __restrict__: the compiler cannot
// prove that the stores to `out` leave `matrix` alone, so it must use plain loads (LDG.E).
__global__ void mix_global_kernel(const float* in, const float* matrix, float* out, int n) {
  const std::int64_t t = static_cast<std::int64_t>(blockIdx.x) * kMixBlock + threadIdx.x;
  const std::int64_t p = t / kChannels;
  const int r = static_cast<int>(t % kChannels);
  if (p >= n) return;
  float acc = 0.f;
#pragma unroll
  for (int c = 0; c < kChannels; ++c) acc += matrix[r * kChannels + c] * in[c * static_cast<std::size_t>(n) + p];
  out[r * static_cast<std::size_t>(n) + p] = acc;
}

// __ldg: the programmer promises the data is read-only for the kernel's lifetime, and the
// load goes through the read-only (non-coherent) path: LDG.E.CONSTANT in SASS.
__global__ void mix_ldg_kernel(const float* in, const float* matrix, float* out, int n) {
  const std::int64_t t = static_cast<std::int64_t>(blockIdx.x) * kMixBlock + threadIdx.x;
  const std::int64_t p = t / kChannels;
  const int r = static_cast<int>(t % kChannels);
  if (p >= n) return;
  float acc = 0.f;
#pragma unroll
  for (int c = 0; c < kChannels; ++c)
    acc += __ldg(&matrix[r * kChannels + c]) * __ldg(&in[c * static_cast<std::size_t>(n) + p]);
  out[r * static_cast<std::size_t>(n) + p] = acc;
}

namespace {
unsigned mix_blocks(int n) {
  return static_cast<unsigned>((static_cast<std::int64_t>(n) * kChannels + kMixBlock - 1) / kMixBlock);
}
}  // namespace

void mix_divergent(const float* in, float* out, int n, cudaStream_t stream) {
  if (n <= 0) return;
  mix_divergent_kernel<<<mix_blocks(n), kMixBlock, 0, stream>>>(in, out, n);
  CUDA_CHECK_LAUNCH();
}
void mix_global(const float* in, const float* matrix, float* out, int n, cudaStream_t stream) {
  if (n <= 0) return;
  mix_global_kernel<<<mix_blocks(n), kMixBlock, 0, stream>>>(in, matrix, out, n);
  CUDA_CHECK_LAUNCH();
}
void mix_ldg(const float* in, const float* matrix, float* out, int n, cudaStream_t stream) {
  if (n <= 0) return;
  mix_ldg_kernel<<<mix_blocks(n), kMixBlock, 0, stream>>>(in, matrix, out, n);
  CUDA_CHECK_LAUNCH();
}

// ---- Step 3's comparison ----------------------------------------------------------------

__device__ __forceinline__ float pixel_or_zero(const Image& img, int i, int j) {
  if (i < 0 || j < 0 || i >= img.width || j >= img.height) return 0.f;
  return reinterpret_cast<const float*>(reinterpret_cast<const char*>(img.data) + j * img.pitch_bytes)[i];
}

__global__ void rotate_manual_kernel(Image img, float* __restrict__ out, float cos_a, float sin_a) {
  const int x = blockIdx.x * kRotateBlockX + threadIdx.x, y = blockIdx.y * kRotateBlockY + threadIdx.y;
  if (x >= img.width || y >= img.height) return;
  const float dx = x + 0.5f - 0.5f * img.width, dy = y + 0.5f - 0.5f * img.height;
  // Pixel centres sit at i + 0.5: shift by half a pixel before splitting into index and weight.
  const float sx = cos_a * dx + sin_a * dy + 0.5f * img.width - 0.5f;
  const float sy = -sin_a * dx + cos_a * dy + 0.5f * img.height - 0.5f;
  const float fx = floorf(sx), fy = floorf(sy);
  const int i = static_cast<int>(fx), j = static_cast<int>(fy);
  const float a = sx - fx, b = sy - fy;
  const float top = (1.f - a) * pixel_or_zero(img, i, j) + a * pixel_or_zero(img, i + 1, j);
  const float bottom = (1.f - a) * pixel_or_zero(img, i, j + 1) + a * pixel_or_zero(img, i + 1, j + 1);
  out[static_cast<std::size_t>(y) * img.width + x] = (1.f - b) * top + b * bottom;
}

void rotate_manual(const Image& img, float angle, float* out, cudaStream_t stream) {
  if (img.width <= 0 || img.height <= 0) return;
  float c = 0, s = 0;
  rotation_cos_sin(angle, c, s);
  rotate_manual_kernel<<<rotate_grid(img.width, img.height), dim3(kRotateBlockX, kRotateBlockY), 0, stream>>>(
      img, out, c, s);
  CUDA_CHECK_LAUNCH();
}

}  // namespace ch06
