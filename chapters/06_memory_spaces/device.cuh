// Chapter 06 — the slow way of each step, written once as device code: the starter's kernels
// (exercise.cu) run it until you replace them, and the chapter's comparisons (provided.cu)
// run it to be timed beside yours. A ring buffer in local memory, a mix whose lanes ask
// constant memory for 16 addresses at once, a rotation interpolated by hand.
// Device code: included by exercise.cu and provided.cu (nvcc) only.
#pragma once

#include "memory_spaces.cuh"

#include "cml/errors.hpp"

#include <cstdint>

namespace ch06 {

// ---- Step 1: the filter with a ring buffer -------------------------------------------------

// memory_spaces.cuh's filter, one thread per column over its segment (grid: fir_grid,
// kFirBlock threads). window[r % kTaps] is indexed by a value known only at run time:
// registers cannot be indexed, so the array lives in the thread's stack frame, in local
// memory (device memory, cached in L1): a 128-byte frame, LDL/STL in SASS.
__device__ __forceinline__ void fir_ring_window(const float* __restrict__ in, float* __restrict__ out, int rows,
                                                int cols, const Taps& taps) {
  const int c = blockIdx.x * kFirBlock + threadIdx.x;
  const int r0 = blockIdx.y * kSegment;
  if (c >= cols) return;
  float window[kTaps];
  for (int k = 0; k < kTaps; ++k) window[k] = 0.f;
  const int end = min(rows, r0 + kSegment);
  for (int r = max(0, r0 - (kTaps - 1)); r < end; ++r) {
    window[r % kTaps] = in[static_cast<std::size_t>(r) * cols + c];
    if (r < r0) continue;  // the rows above the segment only fill the window
    float acc = 0.f;
#pragma unroll
    for (int k = 0; k < kTaps; ++k) acc += taps.w[k] * window[(r - k + kTaps) % kTaps];
    out[static_cast<std::size_t>(r) * cols + c] = acc;
  }
}

// ---- Step 2: the mix, one thread per output value ------------------------------------------

// Thread t computes out[r * n + p] for pixel p = t / kChannels and row r = t % kChannels, so
// the 32 lanes of a warp hold 16 different r at once: each read of M is 16 addresses.
inline constexpr int kMixValueBlock = 256;
inline unsigned mix_value_blocks(int n) {
  return static_cast<unsigned>((static_cast<std::int64_t>(n) * kChannels + kMixValueBlock - 1) / kMixValueBlock);
}

// Copies M (kChannels * kChannels floats, host) into `symbol`, a __constant__ array of the
// caller's translation unit (each .cu file has its own constant memory). cudaMemcpyToSymbol
// goes through the legacy default stream, which a non-blocking stream does not wait for,
// and from pageable memory it may return before its copy has landed ("API synchronization
// behavior", CUDA Runtime API): wait for the device, so that a kernel launched next on any
// stream reads the new M.
template <class Symbol>
void copy_to_constant(const Symbol& symbol, const float* matrix) {
  static_assert(sizeof(Symbol) == kChannels * kChannels * sizeof(float), "a constant array of M's size");
  CUDA_CHECK(cudaMemcpyToSymbol(symbol, matrix, sizeof(Symbol)));
  CUDA_CHECK(cudaDeviceSynchronize());
}

// How the mix reads M and the image: a plain load, or __ldg, the read-only path's
// (LDG.E.CONSTANT: the programmer promises the data does not change during the kernel).
struct PlainLoad {
  __device__ float operator()(const float* p) const { return *p; }
};
struct ReadOnlyLoad {
  __device__ float operator()(const float* p) const { return __ldg(p); }
};

// `m` may point at a __constant__ array (the reads become LDC R, c[0x3][R...]: 16 addresses
// in a warp, served one after the other) or at global memory (LDG: the 16 words, 64 bytes
// apart, are 16 sectors of one request).
template <class Load = PlainLoad>
__device__ __forceinline__ void mix_one_value(const float* in, const float* m, float* out, int n, Load load = {}) {
  const std::int64_t t = static_cast<std::int64_t>(blockIdx.x) * kMixValueBlock + threadIdx.x;
  const std::int64_t p = t / kChannels;
  const int r = static_cast<int>(t % kChannels);
  if (p >= n) return;
  float acc = 0.f;
#pragma unroll
  for (int c = 0; c < kChannels; ++c)
    acc += load(&m[r * kChannels + c]) * load(&in[c * static_cast<std::size_t>(n) + p]);
  out[r * static_cast<std::size_t>(n) + p] = acc;
}

// ---- Step 3: the rotation by hand ---------------------------------------------------------

__device__ __forceinline__ float pixel_or_zero(const Image& img, int i, int j) {
  if (i < 0 || j < 0 || i >= img.width || j >= img.height) return 0.f;
  return reinterpret_cast<const float*>(reinterpret_cast<const char*>(img.data) + j * img.pitch_bytes)[i];
}

// memory_spaces.cuh's rotation with plain loads, one thread per output pixel (grid:
// rotate_grid): four loads and four bounds checks, and the bilinear blend in float.
__device__ __forceinline__ void rotate_by_hand(const Image& img, float* __restrict__ out, float cos_a, float sin_a) {
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

}  // namespace ch06
