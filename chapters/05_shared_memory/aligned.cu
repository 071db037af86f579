// Chapter 05 — what the chapter provides beyond the steps: a padded transpose whose global
// writes cover whole 32-byte sectors on every shape (docs/05_shared_memory.md, "Whole
// sectors: transpose_aligned").
//
// When the matrix's row length is not a multiple of 8 floats, the rows of `out` start at
// every alignment, and a warp writing 32 floats from a multiple of 32 covers five sectors:
// three whole and two partial ones, each partial sector completed by the neighbouring
// tile's block. Measured on the H200 at 8191², that cost the step 2-3 transposes a quarter
// of their speed, while misaligned reads cost a few per cent. Here each block writes, for
// row j of `out`, the 32 floats that start at the sector boundary just before its tile:
// columns row0 - s .. row0 + 31 - s, s = (j * rows) % 8. It needs rows row0 - 8 .. row0 - 1
// of `in` as well (read by the previous block too, which runs beside it: L2 serves them).
#include "transpose.cuh"

#include "cml/errors.hpp"

namespace ch05 {

namespace {

constexpr int kSectorFloats = 8;                   // 32 bytes
constexpr int kStagedRows = kTile + kSectorFloats;  // the block's rows of `in` and the 8 before them

// The block's tile: rows row0 - 8 .. row0 + 31 of `in` (the 8 before row0 only when rows is
// not a multiple of 8, Lead), columns col0 .. col0 + 31; then rows col0 .. col0 + 31 of `out`.
// Whole: the tile and its lead rows lie inside the matrix and it is not the last tile row,
// so no access needs a bounds check (the common case, taken without a branch per access).
template <bool Whole, bool Lead>
__device__ __forceinline__ void move_aligned_tile(const float* __restrict__ in, float* __restrict__ out, int rows,
                                                  int cols, int row0, int col0, float (*tile)[kTile + 1]) {
  constexpr int kRounds = kTile / kBlockRows;
  const int x = static_cast<int>(threadIdx.x), y = static_cast<int>(threadIdx.y);
  // Read: warp y takes rows y, y + 8, ... of the staged rows, 32 consecutive floats each.
  const int c = col0 + x;
  float got[kRounds + 1];
#pragma unroll
  for (int i = Lead ? 0 : 1; i <= kRounds; ++i) {
    const int r = row0 - kSectorFloats + i * kBlockRows + y;
    if (Whole || (r >= 0 && r < rows && c < cols)) got[i] = in[static_cast<std::size_t>(r) * cols + c];
  }
#pragma unroll
  for (int i = Lead ? 0 : 1; i <= kRounds; ++i) {
    const int r = row0 - kSectorFloats + i * kBlockRows + y;
    if (Whole || (r >= 0 && r < rows && c < cols)) tile[i * kBlockRows + y][x] = got[i];
  }
  __syncthreads();
  // Write: warp y writes rows col0 + y + 8k of `out`. Their offsets mod 8 floats are all
  // s = (col0 + y) * rows % 8 (8k * rows adds multiples of 8), so lane x writes column
  // row0 - s + x of each: four whole sectors per warp, shifted s floats back from row0.
  const int s = static_cast<int>(static_cast<std::size_t>(col0 + y) * rows % kSectorFloats);
  const int a = row0 - s + x;
  float v[kRounds], tail[kRounds];
#pragma unroll
  for (int k = 0; k < kRounds; ++k) {
    v[k] = tile[kSectorFloats - s + x][y + k * kBlockRows];
    // The last tile row also ends each row: the s floats past row0 + 32 - s (lanes x < s).
    if (!Whole && a < row0) tail[k] = tile[kSectorFloats - s + x + kTile][y + k * kBlockRows];
  }
  float* dst = out + static_cast<std::size_t>(col0 + y) * rows + a;
#pragma unroll
  for (int k = 0; k < kRounds; ++k) {
    float* row = dst + static_cast<std::size_t>(k * kBlockRows) * rows;
    if (Whole) {
      *row = v[k];
    } else if (col0 + y + k * kBlockRows < cols) {
      if (a >= 0 && a < rows) *row = v[k];
      if (row0 + kTile >= rows && a < row0 && a + kTile < rows) row[kTile] = tail[k];
    }
  }
}

// 32 x 8 threads; blocks numbered down the columns of tiles (block b: tile row b % tile_rows),
// so that the blocks writing the two ends of a row of `out` next to each other run together.
__global__ void __launch_bounds__(kTile * kBlockRows) transpose_aligned_kernel(const float* __restrict__ in,
                                                                              float* __restrict__ out, int rows,
                                                                              int cols) {
  __shared__ float tile[kStagedRows][kTile + 1];  // the pad of step 2: column reads conflict-free
  const int tile_rows = (rows + kTile - 1) / kTile;
  const int row0 = static_cast<int>(blockIdx.x % tile_rows) * kTile;
  const int col0 = static_cast<int>(blockIdx.x / tile_rows) * kTile;
  // Rows of a multiple of 8 floats start on sector boundaries: no lead rows, s = 0.
  const bool lead = rows % kSectorFloats != 0;
  const bool whole = row0 >= kSectorFloats && row0 + kTile < rows && col0 + kTile <= cols;
  if (whole && lead) move_aligned_tile<true, true>(in, out, rows, cols, row0, col0, tile);
  else if (whole) move_aligned_tile<true, false>(in, out, rows, cols, row0, col0, tile);
  else if (lead) move_aligned_tile<false, true>(in, out, rows, cols, row0, col0, tile);
  else move_aligned_tile<false, false>(in, out, rows, cols, row0, col0, tile);
}

}  // namespace

void transpose_aligned(const float* in, float* out, int rows, int cols, cudaStream_t stream) {
  if (rows <= 0 || cols <= 0) return;
  const unsigned tiles = static_cast<unsigned>((rows + kTile - 1) / kTile) * static_cast<unsigned>((cols + kTile - 1) / kTile);
  transpose_aligned_kernel<<<tiles, dim3(kTile, kBlockRows), 0, stream>>>(in, out, rows, cols);
  CUDA_CHECK_LAUNCH();
}

}  // namespace ch05
