// Chapter 06 — the other memory spaces: the API that exercise.cu implements (the learner's
// part, steps 1-3) and what the chapter provides for its comparisons (provided.cu).
// The program, the tests and the solution all include this file.
//
// Every function that takes a stream only enqueues its kernel on it (a size of 0 enqueues
// nothing); buffers come from cudaMalloc and do not overlap. Kernels are declared here so the
// program can ask the runtime about them (cudaFuncGetAttributes); keep their names: the
// tests find them by name in the compiled code.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>

namespace ch06 {

// ---- Step 1: registers, not local memory ----------------------------------------------
// A vertical filter of kTaps taps over a rows x cols matrix of floats, row-major:
//   out[r][c] = sum over k < kTaps of taps.w[k] * in[r - k][c]   (in[r - k] = 0 for r < k).
// Each thread walks down one column over kSegment rows (the grid: fir_grid), so a warp's
// loads and stores are coalesced along a row; it keeps the last kTaps values of its column.
// The kernel must keep them in registers: no stack frame, no local memory, no spill
// (no LDL/STL in its SASS). Kernel name: fir_registers_kernel.
inline constexpr int kTaps = 32;
inline constexpr int kSegment = 64;    // rows per thread
inline constexpr int kFirBlock = 128;  // threads per block, along the columns
struct Taps {
  float w[kTaps];
};
dim3 fir_grid(int rows, int cols);
__global__ void fir_registers_kernel(const float* __restrict__ in, float* __restrict__ out, int rows, int cols,
                                     Taps taps);
void fir_registers(const float* in, float* out, int rows, int cols, const Taps& taps, cudaStream_t stream);

// ---- Step 2: constant memory, one address per warp ------------------------------------
// A kChannels x kChannels matrix M mixes the channels of n pixels, planar layout (channel c
// of pixel p at in[c * n + p]):  out[r * n + p] = sum over c of M[r][c] * in[c * n + p].
// M lives in constant memory (set_mix, provided in exercise.cu, copies it there). Every
// constant-memory read of the kernel must be one address for the whole warp: in SASS, the
// user constant bank c[0x3] at immediate offsets (ULDC ... c[0x3][0x40] or an operand
// c[0x3][0x40]) or at a uniform register's (c[0x3][UR4+0x8]: the same for every lane),
// never indexed by a per-thread register (LDC R, c[0x3][R]). The launch: one thread per
// pixel, a 1-D grid of ceil(n / B) 1-D blocks of B threads (B yours), not one thread per
// output value. Kernel name: mix_constant_kernel.
inline constexpr int kChannels = 16;
// set_mix: host, kChannels * kChannels floats, row-major. Synchronous: when it returns, M is
// in constant memory for kernels launched afterwards on any stream (a non-blocking one too).
void set_mix(const float* matrix);
__global__ void mix_constant_kernel(const float* __restrict__ in, float* __restrict__ out, int n);
void mix_constant(const float* in, float* out, int n, cudaStream_t stream);

// ---- Step 3: the texture path ----------------------------------------------------------
// A width x height image of floats in pitched device memory (cudaMallocPitch), row y at
// (const char*)data + y * pitch_bytes.
struct Image {
  const float* data;
  std::size_t pitch_bytes;
  int width, height;
};
// The rotation by `angle` radians about the image's centre (w/2, h/2): output pixel (x, y),
// whose centre is (x + 0.5, y + 0.5), takes the image's value at
//   sx = cos * dx + sin * dy + w/2,  sy = -sin * dx + cos * dy + h/2,
//   dx = x + 0.5 - w/2, dy = y + 0.5 - h/2   (cos, sin: rotation_cos_sin(angle), floats),
// where the image is a continuous function: bilinear interpolation between the four
// nearest pixel centres (pixel (i, j) has its centre at (i + 0.5, j + 0.5)), and every pixel
// outside the image counts as 0. out is width x height, dense (out[y * width + x]).
//
// create_rotation_texture: a texture object over img (the caller destroys it with
// cudaDestroyTextureObject) whose hardware addressing and filtering compute exactly that
// function; may be synchronous. rotate_texture: the rotation, every value read through
// that texture (texture instructions in SASS, no global loads of the image).
// Kernel name: rotate_texture_kernel.
cudaTextureObject_t create_rotation_texture(const Image& img);
__global__ void rotate_texture_kernel(cudaTextureObject_t tex, Image img, float* __restrict__ out, float cos_a,
                                      float sin_a);
void rotate_texture(cudaTextureObject_t tex, const Image& img, float angle, float* out, cudaStream_t stream);

// The cosine and sine every rotation (GPU and CPU) uses, so all compute from the same floats.
void rotation_cos_sin(float angle, float& c, float& s);
// The 2D grid every rotation launches: 32 x 8 threads over the image.
dim3 rotate_grid(int width, int height);
inline constexpr int kRotateBlockX = 32, kRotateBlockY = 8;

// ---- Provided by the chapter (provided.cu; the slow ways are device.cuh's) --------------

// Step 1's filter with a per-thread ring buffer indexed at run time (window[r % kTaps]):
// the shipped starter's way, in local memory. Kernel: fir_ring_kernel.
void fir_ring(const float* in, float* out, int rows, int cols, const Taps& taps, cudaStream_t stream);

// Register spills on a kernel of their own, apart from the steps: each thread sorts the
// kSortRun values of one column in rows r0 .. r0 + kSortRun - 1 of a rows x cols matrix
// (in -> out, row-major; a shorter last run sorts what there is), ascending, with a bitonic
// network indexed by constants only. The budget: no cap (sort_registers_kernel, all in
// registers); a cap of 32 registers a thread, so ptxas spills to local memory
// (sort_capped_kernel); the cap of 8 blocks of 256 threads per SM with CUDA 13's
// .pragma "enable_smem_spilling", spills to shared memory (sort_smem_spill_kernel: 32
// registers where an SM holds 2048 threads, more on sm_75 and sm_86, provided.cu).
inline constexpr int kSortRun = 32, kSortBlock = 256;
enum class SortBudget { kRegisters, kLocalSpill, kSharedSpill };
void sort_runs(SortBudget budget, const float* in, float* out, int rows, int cols, cudaStream_t stream);

// Step 2's mix with one thread per output value (lanes along r: 16 rows of M per warp at
// once), reading M from constant memory (mix_divergent_kernel: divergent, serialised), from
// global memory with plain loads (mix_global_kernel), and through the read-only path with
// __ldg (mix_ldg_kernel). M for the last two is the device array `matrix`. set_mix_divergent
// copies M into provided.cu's own constant array (each translation unit has its own);
// synchronous, as set_mix.
void set_mix_divergent(const float* matrix);
void mix_divergent(const float* in, float* out, int n, cudaStream_t stream);
void mix_global(const float* in, const float* matrix, float* out, int n, cudaStream_t stream);
void mix_ldg(const float* in, const float* matrix, float* out, int n, cudaStream_t stream);

// Step 3's rotation with plain loads: hand-written bilinear interpolation with bounds
// checks, in float. Kernel: rotate_manual_kernel.
void rotate_manual(const Image& img, float angle, float* out, cudaStream_t stream);

}  // namespace ch06
