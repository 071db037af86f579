// Chapter 06 — the other memory spaces: registers and local memory, constant memory, the
// texture path. THE file you edit: three steps, TODO(1) to TODO(3). Every function works as
// shipped (correct, in the slow space). Keep the kernels' names: the tests find them by
// name in the compiled code.
//
//   ./lab run 06            your kernels beside the chapter's comparisons, with their SASS
//   ./lab check 06          the chapter's tests: which steps pass, and why not
//   ./lab hint 06           one more hint (chapters/06_memory_spaces/hints.md)
//
// What each function must do is in memory_spaces.cuh.
#include "memory_spaces.cuh"

#include "cml/errors.hpp"

#include <cstdint>

namespace ch06 {

// ---- Step 1 -----------------------------------------------------------------------------

// TODO(1): keep each thread's last kTaps values in registers. As shipped the window is a
// ring buffer indexed by r % kTaps, an index known only at run time: registers cannot be
// indexed, so the whole array lives in local memory (a 128-byte stack frame, LDL/STL in
// SASS). Write the same filter so that every index into the window is a compile-time
// constant once the loops are unrolled. Constraints: no stack frame, no spill, no local
// memory at all in fir_registers_kernel (check with ./lab run 06 -- --mode=mechanism);
// same results, same grid and block (fir_grid, kFirBlock).
__global__ void fir_registers_kernel(const float* __restrict__ in, float* __restrict__ out, int rows, int cols,
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

void fir_registers(const float* in, float* out, int rows, int cols, const Taps& taps, cudaStream_t stream) {
  if (rows <= 0 || cols <= 0) return;
  fir_registers_kernel<<<fir_grid(rows, cols), kFirBlock, 0, stream>>>(in, out, rows, cols, taps);
  CUDA_CHECK_LAUNCH();
}

// ---- Step 2 -----------------------------------------------------------------------------

// The matrix M, in this file's constant memory (each .cu file has its own).
__constant__ float c_mix[kChannels * kChannels];

void set_mix(const float* matrix) { CUDA_CHECK(cudaMemcpyToSymbol(c_mix, matrix, sizeof(c_mix))); }

constexpr int kMixBlock = 256;

// TODO(2): make every read of c_mix one address for the whole warp. As shipped one thread
// computes one output value (pixel t / 16, row t % 16): the 32 lanes of a warp ask for 16
// different rows of M at once, and the constant cache serves one address at a time (16
// rounds per read: LDC R, c[0x3][R] in SASS). Decide what a thread computes so that the
// lanes differ along the pixels only. Constraints: same results for every n (not a
// multiple of the block or of 32); loads of `in` and stores of `out` stay coalesced; M
// stays in c_mix (the tests change it with set_mix); choose the launch to match.
__global__ void mix_constant_kernel(const float* __restrict__ in, float* __restrict__ out, int n) {
  const std::int64_t t = static_cast<std::int64_t>(blockIdx.x) * kMixBlock + threadIdx.x;
  const std::int64_t p = t / kChannels;
  const int r = static_cast<int>(t % kChannels);
  if (p >= n) return;
  float acc = 0.f;
#pragma unroll
  for (int c = 0; c < kChannels; ++c) acc += c_mix[r * kChannels + c] * in[c * static_cast<std::size_t>(n) + p];
  out[r * static_cast<std::size_t>(n) + p] = acc;
}

void mix_constant(const float* in, float* out, int n, cudaStream_t stream) {
  if (n <= 0) return;
  const auto blocks = static_cast<unsigned>((static_cast<std::int64_t>(n) * kChannels + kMixBlock - 1) / kMixBlock);
  mix_constant_kernel<<<blocks, kMixBlock, 0, stream>>>(in, out, n);
  CUDA_CHECK_LAUNCH();
}

// ---- Step 3 -----------------------------------------------------------------------------

// TODO(3): read the image through a texture whose hardware does the rotation's
// interpolation and its edges. create_rotation_texture returns a texture object over the
// pitched image (the caller destroys it); choose its addressing (what a read outside the
// image returns), its filtering and its coordinates so that one fetch per output pixel
// gives memory_spaces.cuh's function: bilinear between pixel centres at i + 0.5, and 0
// outside. Then rewrite rotate_texture_kernel to read only through `tex` (no loads of
// img.data). As shipped there is no texture, and the kernel interpolates by hand with
// plain loads and four bounds checks per output pixel.
cudaTextureObject_t create_rotation_texture([[maybe_unused]] const Image& img) { return 0; }

__global__ void rotate_texture_kernel([[maybe_unused]] cudaTextureObject_t tex, Image img, float* __restrict__ out,
                                      float cos_a, float sin_a) {
  const int x = blockIdx.x * kRotateBlockX + threadIdx.x, y = blockIdx.y * kRotateBlockY + threadIdx.y;
  if (x >= img.width || y >= img.height) return;
  const auto pixel_or_zero = [](const Image& img, int i, int j) {
    if (i < 0 || j < 0 || i >= img.width || j >= img.height) return 0.f;
    return reinterpret_cast<const float*>(reinterpret_cast<const char*>(img.data) + j * img.pitch_bytes)[i];
  };
  const float dx = x + 0.5f - 0.5f * img.width, dy = y + 0.5f - 0.5f * img.height;
  const float sx = cos_a * dx + sin_a * dy + 0.5f * img.width - 0.5f;
  const float sy = -sin_a * dx + cos_a * dy + 0.5f * img.height - 0.5f;
  const float fx = floorf(sx), fy = floorf(sy);
  const int i = static_cast<int>(fx), j = static_cast<int>(fy);
  const float a = sx - fx, b = sy - fy;
  const float top = (1.f - a) * pixel_or_zero(img, i, j) + a * pixel_or_zero(img, i + 1, j);
  const float bottom = (1.f - a) * pixel_or_zero(img, i, j + 1) + a * pixel_or_zero(img, i + 1, j + 1);
  out[static_cast<std::size_t>(y) * img.width + x] = (1.f - b) * top + b * bottom;
}

void rotate_texture(cudaTextureObject_t tex, const Image& img, float angle, float* out, cudaStream_t stream) {
  if (img.width <= 0 || img.height <= 0) return;
  float c = 0, s = 0;
  rotation_cos_sin(angle, c, s);
  rotate_texture_kernel<<<rotate_grid(img.width, img.height), dim3(kRotateBlockX, kRotateBlockY), 0, stream>>>(
      tex, img, out, c, s);
  CUDA_CHECK_LAUNCH();
}

}  // namespace ch06
