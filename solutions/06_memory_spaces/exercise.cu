// Chapter 06 — the other memory spaces: the solution of chapters/06_memory_spaces/exercise.cu.
// Each kernel's comments say why it is written so; memory_spaces.cuh says what it must do.
//
//   ./lab run 06 --solution        this file's kernels beside the chapter's comparisons
#include "device.cuh"
#include "memory_spaces.cuh"

#include "cml/errors.hpp"

#include <cstdint>

// Marks this translation unit as the solution: the learner's tests fail when it is linked
// into the learner's build (an exercise.cu that includes or copies this file).
extern "C" const int cml_ch06_solution_tu = 1;

namespace ch06 {

// ---- Step 1 -----------------------------------------------------------------------------

// A shift register instead of a ring: window[k] always holds in[r - k]. Every index is a
// constant after unrolling (the shift and the sum are fully unrolled; the row loop is not,
// though the compiler unrolls it by two rows itself), so ptxas can give each element a
// register: no stack frame. The shift is cheap, not free: ptxas renames registers where it
// can and moves the rest (36 MOV among the row loop's 138 instructions:
// docs/06_memory_spaces.md, "Local memory").
__global__ void fir_registers_kernel(const float* __restrict__ in, float* __restrict__ out, int rows, int cols,
                                     Taps taps) {
  const int c = blockIdx.x * kFirBlock + threadIdx.x;
  const int r0 = blockIdx.y * kSegment;
  if (c >= cols) return;
  float window[kTaps];
#pragma unroll
  for (int k = 0; k < kTaps; ++k) window[k] = 0.f;
  const int end = min(rows, r0 + kSegment);
  for (int r = max(0, r0 - (kTaps - 1)); r < end; ++r) {
#pragma unroll
    for (int k = kTaps - 1; k > 0; --k) window[k] = window[k - 1];
    window[0] = in[static_cast<std::size_t>(r) * cols + c];
    if (r < r0) continue;  // the rows above the segment only fill the window
    float acc = 0.f;
#pragma unroll
    for (int k = 0; k < kTaps; ++k) acc += taps.w[k] * window[k];
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

// cudaMemcpyToSymbol(c_mix, ...), then a wait: device.cuh's copy_to_constant says why.
void set_mix(const float* matrix) { copy_to_constant(c_mix, matrix); }

constexpr int kMixBlock = 256;

// One thread per pixel, all 16 outputs of it: the lanes differ only in p, and M[r][c] is
// indexed by the unrolled loops' constants, so every lane reads the same word at the same
// time (a broadcast; ULDC c[0x3][imm] in SASS, one load per warp for a pair of floats).
// Loads and stores stay coalesced: for each channel the warp touches 32 consecutive floats.
__global__ void mix_constant_kernel(const float* __restrict__ in, float* __restrict__ out, int n) {
  const std::int64_t p = static_cast<std::int64_t>(blockIdx.x) * kMixBlock + threadIdx.x;
  if (p >= n) return;
  float v[kChannels];
#pragma unroll
  for (int c = 0; c < kChannels; ++c) v[c] = in[c * static_cast<std::size_t>(n) + p];
#pragma unroll
  for (int r = 0; r < kChannels; ++r) {
    float acc = 0.f;
#pragma unroll
    for (int c = 0; c < kChannels; ++c) acc += c_mix[r * kChannels + c] * v[c];
    out[r * static_cast<std::size_t>(n) + p] = acc;
  }
}

void mix_constant(const float* in, float* out, int n, cudaStream_t stream) {
  if (n <= 0) return;
  const auto blocks = static_cast<unsigned>((static_cast<std::int64_t>(n) + kMixBlock - 1) / kMixBlock);
  mix_constant_kernel<<<blocks, kMixBlock, 0, stream>>>(in, out, n);
  CUDA_CHECK_LAUNCH();
}

// ---- Step 3 -----------------------------------------------------------------------------

// The reference's function, chosen piece by piece:
//   0 outside the image      -> cudaAddressModeBorder (the border colour is 0); Clamp would
//                               repeat the edge pixels, Wrap/Mirror need normalised coordinates;
//   bilinear between centres -> cudaFilterModeLinear: the hardware fetches the 4 texels around
//                               (x - 0.5, y - 0.5) and blends them with 9-bit weights (8
//                               fractional bits), so results agree within 1/256 of the
//                               neighbours' differences, not exactly;
//   pixel units              -> unnormalised coordinates: tex2D(x, y) with texel (i, j)'s
//                               centre at (i + 0.5, j + 0.5), as in the header.
// Pitched linear memory can be filtered in 2D (1D linear memory cannot); its pitch must be a
// multiple of cudaDeviceProp::texturePitchAlignment, which cudaMallocPitch guarantees.
cudaTextureObject_t create_rotation_texture(const Image& img) {
  cudaResourceDesc res{};
  res.resType = cudaResourceTypePitch2D;
  res.res.pitch2D.devPtr = const_cast<float*>(img.data);
  res.res.pitch2D.desc = cudaCreateChannelDesc<float>();
  res.res.pitch2D.width = static_cast<std::size_t>(img.width);
  res.res.pitch2D.height = static_cast<std::size_t>(img.height);
  res.res.pitch2D.pitchInBytes = img.pitch_bytes;
  cudaTextureDesc tex{};
  tex.addressMode[0] = cudaAddressModeBorder;
  tex.addressMode[1] = cudaAddressModeBorder;
  tex.borderColor[0] = 0.f;
  tex.filterMode = cudaFilterModeLinear;
  tex.readMode = cudaReadModeElementType;
  tex.normalizedCoords = 0;
  cudaTextureObject_t t = 0;
  CUDA_CHECK(cudaCreateTextureObject(&t, &res, &tex, nullptr));
  return t;
}

// One fetch per output pixel: the bounds checks, the four loads and the blend are the
// texture unit's (TEX in SASS).
__global__ void rotate_texture_kernel(cudaTextureObject_t tex, Image img, float* __restrict__ out, float cos_a,
                                      float sin_a) {
  const int x = blockIdx.x * kRotateBlockX + threadIdx.x, y = blockIdx.y * kRotateBlockY + threadIdx.y;
  if (x >= img.width || y >= img.height) return;
  const float dx = x + 0.5f - 0.5f * img.width, dy = y + 0.5f - 0.5f * img.height;
  const float sx = cos_a * dx + sin_a * dy + 0.5f * img.width;
  const float sy = -sin_a * dx + cos_a * dy + 0.5f * img.height;
  out[static_cast<std::size_t>(y) * img.width + x] = tex2D<float>(tex, sx, sy);
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
