// Chapter 06 — the other memory spaces: registers and local memory, constant memory, the
// texture path. THE file you edit: three steps, TODO(1) to TODO(3). Every function works as
// shipped: each kernel runs the slow way of its step (device.cuh), correct, in the slow
// space. Keep the kernels' names: the tests find them by name in the compiled code.
//
//   ./lab run 06            your kernels beside the chapter's comparisons, with their SASS
//   ./lab check 06          the chapter's tests: which steps pass, and why not
//   ./lab hint 06           one more hint (chapters/06_memory_spaces/hints.md)
//
// What each function must do is in memory_spaces.cuh; the slow ways you start from are in
// device.cuh (fir_ring_window, mix_one_value, rotate_by_hand).
#include "device.cuh"
#include "memory_spaces.cuh"

#include "cml/errors.hpp"

namespace ch06 {

// ---- Step 1 -----------------------------------------------------------------------------

// TODO(1): keep each thread's last kTaps values in registers. As shipped the kernel runs
// device.cuh's fir_ring_window: a ring buffer indexed by r % kTaps, an index known only at
// run time. Registers cannot be indexed, so the whole array lives in local memory (a
// 128-byte stack frame, LDL/STL in SASS). Write the filter here so that every index into the
// window is known at compile time. Constraints: no stack
// frame, no spill, no local memory at all in fir_registers_kernel (check with ./lab check 06,
// which reads your compiled code even without a GPU); same results, same grid and block
// (fir_grid, kFirBlock).
__global__ void fir_registers_kernel(const float* __restrict__ in, float* __restrict__ out, int rows, int cols,
                                     Taps taps) {
  fir_ring_window(in, out, rows, cols, taps);
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

// TODO(2): make every read of c_mix one address for the whole warp. As shipped the kernel
// runs device.cuh's mix_one_value: one thread computes one output value (pixel t / 16,
// row t % 16), so the 32 lanes of a warp ask for 16 different rows of M at once, and the
// constant cache serves one address at a time (16 rounds per read: LDC R, c[0x3][R] in
// SASS). Write it so that the lanes of a warp differ along the pixels only. Constraints: the
// launch memory_spaces.cuh fixes (1-D, one thread per pixel, just enough blocks: the tests
// count them); same results for every n (not a multiple of the block or of 32); loads of
// `in` and stores of `out` stay coalesced; M stays in c_mix (the tests change it with
// set_mix).
__global__ void mix_constant_kernel(const float* __restrict__ in, float* __restrict__ out, int n) {
  mix_one_value(in, c_mix, out, n);
}

void mix_constant(const float* in, float* out, int n, cudaStream_t stream) {
  if (n <= 0) return;
  mix_constant_kernel<<<mix_value_blocks(n), kMixValueBlock, 0, stream>>>(in, out, n);
  CUDA_CHECK_LAUNCH();
}

// ---- Step 3 -----------------------------------------------------------------------------

// TODO(3): read the image through a texture whose hardware does the rotation's
// interpolation and its edges. create_rotation_texture returns a texture object over the
// pitched image (the caller destroys it); choose its addressing (what a read outside the
// image returns), its filtering and its coordinates so that one fetch per output pixel
// gives memory_spaces.cuh's function: bilinear between pixel centres at i + 0.5, and 0
// outside. Then write rotate_texture_kernel to read only through `tex` (no loads of
// img.data). As shipped there is no texture, and the kernel runs device.cuh's
// rotate_by_hand: plain loads, four bounds checks and the blend, per output pixel.
cudaTextureObject_t create_rotation_texture([[maybe_unused]] const Image& img) { return 0; }

__global__ void rotate_texture_kernel([[maybe_unused]] cudaTextureObject_t tex, Image img, float* __restrict__ out,
                                      float cos_a, float sin_a) {
  rotate_by_hand(img, out, cos_a, sin_a);
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
