// Chapter 06 — what the chapter provides beside your steps: the grids, and the comparisons
// each step is timed against (the ring buffer, the divergent constant reads and their
// global / read-only twins, the rotation by hand: device.cuh's slow ways, in kernels of
// their own), plus register spills shown on a kernel of their own (a per-thread sort
// squeezed by a register cap). ./lab run 06 times them beside yours.
#include "device.cuh"
#include "memory_spaces.cuh"

#include "cml/arch.cuh"
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

// ---- Step 1's comparison ----------------------------------------------------------------

__global__ void fir_ring_kernel(const float* __restrict__ in, float* __restrict__ out, int rows, int cols, Taps taps) {
  fir_ring_window(in, out, rows, cols, taps);
}

void fir_ring(const float* in, float* out, int rows, int cols, const Taps& taps, cudaStream_t stream) {
  if (rows <= 0 || cols <= 0) return;
  fir_ring_kernel<<<fir_grid(rows, cols), kFirBlock, 0, stream>>>(in, out, rows, cols, taps);
  CUDA_CHECK_LAUNCH();
}

// ---- Register spills --------------------------------------------------------------------

// Bitonic sort of the thread's kSortRun values: every index is a constant once the three
// loops are unrolled, so the array can live in registers (about 70 of them); a short last
// run is padded with +inf, which sorts to the end and is not written back.
__device__ __forceinline__ void sort_run(const float* __restrict__ in, float* __restrict__ out, int rows, int cols) {
  const int c = blockIdx.x * kSortBlock + threadIdx.x;
  const int r0 = blockIdx.y * kSortRun;
  if (c >= cols) return;
  float v[kSortRun];
#pragma unroll
  for (int k = 0; k < kSortRun; ++k) v[k] = r0 + k < rows ? in[static_cast<std::size_t>(r0 + k) * cols + c] : INFINITY;
#pragma unroll
  for (int size = 2; size <= kSortRun; size *= 2)
#pragma unroll
    for (int stride = size / 2; stride > 0; stride /= 2)
#pragma unroll
      for (int i = 0; i < kSortRun; ++i) {
        const int j = i ^ stride;
        if (j > i) {
          const bool up = (i & size) == 0;
          const float a = v[i], b = v[j];
          v[i] = up ? fminf(a, b) : fmaxf(a, b);
          v[j] = up ? fmaxf(a, b) : fminf(a, b);
        }
      }
#pragma unroll
  for (int k = 0; k < kSortRun; ++k)
    if (r0 + k < rows) out[static_cast<std::size_t>(r0 + k) * cols + c] = v[k];
}

__global__ void sort_registers_kernel(const float* __restrict__ in, float* __restrict__ out, int rows, int cols) {
  sort_run(in, out, rows, cols);
}

// At most 32 registers a thread, fewer than the run needs, so ptxas spills to local memory.
// (__launch_bounds__(256, 8) gives the same cap where an SM holds 2048 threads: 65536 / 2048;
// __maxnreg__ gives it on every GPU.)
__global__ void __maxnreg__(32)
    sort_capped_kernel(const float* __restrict__ in, float* __restrict__ out, int rows, int cols) {
  sort_run(in, out, rows, cols);
}

// CUDA 13: ptxas may spill to shared memory instead, for a kernel with __launch_bounds__
// (so it knows how many threads share the block's shared memory), which cannot be combined
// with __maxnreg__: the cap comes from 8 blocks of 256 threads per SM, 32 registers, where
// an SM holds 2048 threads; as many blocks as it holds elsewhere (sm_86: 6, 40 registers;
// sm_75: 4, 64 registers), so there the run may spill less or not at all.
__global__ void __launch_bounds__(kSortBlock, cml::arch::blocks_per_sm(kSortBlock, 8))
    sort_smem_spill_kernel(const float* __restrict__ in, float* __restrict__ out, int rows, int cols) {
  asm volatile(".pragma \"enable_smem_spilling\";");
  sort_run(in, out, rows, cols);
}

void sort_runs(SortBudget budget, const float* in, float* out, int rows, int cols, cudaStream_t stream) {
  if (rows <= 0 || cols <= 0) return;
  const dim3 grid(static_cast<unsigned>((cols + kSortBlock - 1) / kSortBlock),
                  static_cast<unsigned>((rows + kSortRun - 1) / kSortRun));
  auto* kernel = budget == SortBudget::kRegisters    ? sort_registers_kernel
                 : budget == SortBudget::kLocalSpill ? sort_capped_kernel
                                                     : sort_smem_spill_kernel;
  kernel<<<grid, kSortBlock, 0, stream>>>(in, out, rows, cols);
  CUDA_CHECK_LAUNCH();
}

// ---- Step 2's comparisons ---------------------------------------------------------------

// provided.cu's own copy of M: each translation unit has its own constant memory.
__constant__ float c_mix_divergent[kChannels * kChannels];

void set_mix_divergent(const float* matrix) { copy_to_constant(c_mix_divergent, matrix); }

__global__ void mix_divergent_kernel(const float* __restrict__ in, float* __restrict__ out, int n) {
  mix_one_value(in, c_mix_divergent, out, n);
}

// No pointer is __restrict__: the compiler cannot prove that the stores to `out` leave
// `matrix` alone, so it must use plain loads (LDG.E).
__global__ void mix_global_kernel(const float* in, const float* matrix, float* out, int n) {
  mix_one_value(in, matrix, out, n);
}

// __ldg: LDG.E.CONSTANT in SASS, whatever the pointers' qualifiers.
__global__ void mix_ldg_kernel(const float* in, const float* matrix, float* out, int n) {
  mix_one_value(in, matrix, out, n, ReadOnlyLoad{});
}

namespace {
// Every comparison's launch: one thread per output value, nothing for n = 0.
template <class Kernel, class... Args>
void launch_mix(Kernel kernel, int n, cudaStream_t stream, Args... args) {
  if (n <= 0) return;
  kernel<<<mix_value_blocks(n), kMixValueBlock, 0, stream>>>(args...);
  CUDA_CHECK_LAUNCH();
}
}  // namespace

void mix_divergent(const float* in, float* out, int n, cudaStream_t stream) {
  launch_mix(mix_divergent_kernel, n, stream, in, out, n);
}
void mix_global(const float* in, const float* matrix, float* out, int n, cudaStream_t stream) {
  launch_mix(mix_global_kernel, n, stream, in, matrix, out, n);
}
void mix_ldg(const float* in, const float* matrix, float* out, int n, cudaStream_t stream) {
  launch_mix(mix_ldg_kernel, n, stream, in, matrix, out, n);
}

// ---- Step 3's comparison ----------------------------------------------------------------

__global__ void rotate_manual_kernel(Image img, float* __restrict__ out, float cos_a, float sin_a) {
  rotate_by_hand(img, out, cos_a, sin_a);
}

void rotate_manual(const Image& img, float angle, float* out, cudaStream_t stream) {
  if (img.width <= 0 || img.height <= 0) return;
  float c = 0, s = 0;
  rotation_cos_sin(angle, c, s);
  const dim3 block(kRotateBlockX, kRotateBlockY);
  rotate_manual_kernel<<<rotate_grid(img.width, img.height), block, 0, stream>>>(img, out, c, s);
  CUDA_CHECK_LAUNCH();
}

}  // namespace ch06
