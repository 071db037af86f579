// Chapter 05 — shared memory: banks, conflicts, padding, swizzling, access widths. THE
// file you edit: four steps, TODO(1) to TODO(4). Every function works as shipped (a naive
// transpose, correct and slow). Keep the kernels' names: the tests find them by name in
// the compiled code and in Nsight Compute's counters.
//
//   ./lab run 05            your transposes against a copy, and the bank experiments
//   ./lab check 05          the chapter's tests: which steps pass, and why not
//   ./lab hint 05           one more hint (chapters/05_shared_memory/hints.md)
//
// What each function must do is in shared_memory.cuh; tile_grid, kTile and kBlockRows too.
#include "shared_memory.cuh"

#include "cml/errors.hpp"

#include <stdexcept>

namespace ch05 {

// The shipped body of every step: reads along rows of `in` (coalesced), writes along
// columns of `out` (each lane of a warp in a different row: 32 sectors per request).
__device__ __forceinline__ void transpose_naive_body(const float* __restrict__ in, float* __restrict__ out, int rows,
                                                     int cols) {
  const int c = blockIdx.x * kTile + threadIdx.x;
  const int r0 = blockIdx.y * kTile + threadIdx.y;
  if (c >= cols) return;
  for (int k = 0; k < kTile && r0 + k < rows; k += kBlockRows)
    out[static_cast<std::size_t>(c) * rows + r0 + k] = in[static_cast<std::size_t>(r0 + k) * cols + c];
}

// TODO(1): make both sides of the transpose coalesced: a warp must read 32 consecutive
// floats of a row of `in` AND write 32 consecutive floats of a row of `out`. A block of
// 32 x 8 threads owns one T x T tile (T = 32, or 64: shared_memory.cuh): stage it in shared
// memory, so the element a thread writes out need not be one it read. Constraints: every
// shape (edge tiles are partial: read and write only inside the matrix), and no thread may
// read the tile before the whole block has written it. Bank conflicts are allowed in this
// step.
__global__ void transpose_tiled_kernel(const float* __restrict__ in, float* __restrict__ out, int rows, int cols) {
  transpose_naive_body(in, out, rows, cols);
}

void transpose_tiled(const float* in, float* out, int rows, int cols, cudaStream_t stream) {
  if (rows <= 0 || cols <= 0) return;
  transpose_tiled_kernel<<<tile_grid(rows, cols), dim3(kTile, kBlockRows), 0, stream>>>(in, out, rows, cols);
  CUDA_CHECK_LAUNCH();
}

// TODO(2): your step 1 transpose, with no bank conflict in its shared loads and stores.
// Reading a column of a 32 x 32 float tile puts all 32 lanes in one bank (32 wavefronts
// for one instruction): change the tile's shape, not the threads' work, so a column's 32
// words fall in 32 different banks while a row's still do.
__global__ void transpose_padded_kernel(const float* __restrict__ in, float* __restrict__ out, int rows, int cols) {
  transpose_naive_body(in, out, rows, cols);
}

void transpose_padded(const float* in, float* out, int rows, int cols, cudaStream_t stream) {
  if (rows <= 0 || cols <= 0) return;
  transpose_padded_kernel<<<tile_grid(rows, cols), dim3(kTile, kBlockRows), 0, stream>>>(in, out, rows, cols);
  CUDA_CHECK_LAUNCH();
}

// TODO(3): the same, with no padding: the tile stays exactly T x T floats. Choose where
// element (row, col) of the tile is kept so that both a row and a column of the tile cover
// the 32 banks. Every element must keep a place of its own (two elements in one slot lose
// one of them).
__global__ void transpose_swizzled_kernel(const float* __restrict__ in, float* __restrict__ out, int rows, int cols) {
  transpose_naive_body(in, out, rows, cols);
}

void transpose_swizzled(const float* in, float* out, int rows, int cols, cudaStream_t stream) {
  if (rows <= 0 || cols <= 0) return;
  transpose_swizzled_kernel<<<tile_grid(rows, cols), dim3(kTile, kBlockRows), 0, stream>>>(in, out, rows, cols);
  CUDA_CHECK_LAUNCH();
}

// TODO(4): a transpose whose every access moves 16 bytes: global loads and stores, and
// shared loads and stores (LDG.E.128, STG.E.128, LDS.128, STS.128 in SASS), with no bank
// conflict, for rows and cols multiples of 4. The tile, the block and the launch are yours
// (change the launch below with the kernel). A 16-byte access must be 16-byte aligned, so
// a one-float pad is not an option; a 16-byte access is served per quarter-warp, so count
// banks over 8 lanes at a time. A 16-byte shared load whose four floats are not all used
// may be split by nvcc into narrower ones.
__global__ void transpose_wide_kernel(const float* __restrict__ in, float* __restrict__ out, int rows, int cols) {
  transpose_naive_body(in, out, rows, cols);
}

void transpose_wide(const float* in, float* out, int rows, int cols, cudaStream_t stream) {
  if (rows % 4 != 0 || cols % 4 != 0)
    throw std::invalid_argument("transpose_wide: rows and cols must be multiples of 4");
  if (rows <= 0 || cols <= 0) return;
  transpose_wide_kernel<<<tile_grid(rows, cols), dim3(kTile, kBlockRows), 0, stream>>>(in, out, rows, cols);
  CUDA_CHECK_LAUNCH();
}

}  // namespace ch05
