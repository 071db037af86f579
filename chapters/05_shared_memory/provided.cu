// Chapter 05 — what the chapter provides: the code you read and keep, in two parts.
//
//   Part 1, the ceilings and the experiments: the tile-shaped copy and the naive transpose
//     the tiled ones are measured against, and the access-width experiments whose
//     wavefronts Nsight Compute counts and the bank model predicts (cml/banks.hpp).
//   Part 2, whole sectors: transpose_aligned, a padded transpose whose global writes cover
//     whole 32-byte sectors on every shape (docs/05_shared_memory.md, "Whole sectors:
//     transpose_aligned"). Read it after step 2.
#include "shared_memory.cuh"

#include "cml/errors.hpp"

#include <stdexcept>
#include <string>

namespace ch05 {

// =========================================================================================
// Part 1 — the ceilings (copy_tiles, transpose_naive) and the access-width experiments
// =========================================================================================

namespace {

__global__ void copy_tiles_kernel(const float* __restrict__ in, float* __restrict__ out, int rows, int cols) {
  const int c = blockIdx.x * kTile + threadIdx.x;
  const int r0 = blockIdx.y * kTile + threadIdx.y;
  if (c >= cols) return;
  for (int k = 0; k < kTile && r0 + k < rows; k += kBlockRows) {
    const std::size_t i = static_cast<std::size_t>(r0 + k) * cols + c;
    out[i] = in[i];
  }
}

__global__ void transpose_naive_kernel(const float* __restrict__ in, float* __restrict__ out, int rows, int cols) {
  const int c = blockIdx.x * kTile + threadIdx.x;
  const int r0 = blockIdx.y * kTile + threadIdx.y;
  if (c >= cols) return;
  for (int k = 0; k < kTile && r0 + k < rows; k += kBlockRows)
    out[static_cast<std::size_t>(c) * rows + r0 + k] = in[static_cast<std::size_t>(r0 + k) * cols + c];
}

// Every component of a loaded vector is used, so nvcc keeps the one wide load.
__device__ float sum(float v) { return v; }
__device__ float sum(float2 v) { return v.x + v.y; }
__device__ float sum(float4 v) { return v.x + v.y + v.z + v.w; }
template <typename V>
__device__ V make(float x);
template <>
__device__ float make<float>(float x) {
  return x;
}
template <>
__device__ float2 make<float2>(float x) {
  return make_float2(x, x + 1);
}
template <>
__device__ float4 make<float4>(float x) {
  return make_float4(x, x + 1, x + 2, x + 3);
}

template <typename V>
__global__ void shared_load_experiment(const unsigned* __restrict__ element, unsigned active,
                                       float* __restrict__ sink) {
  __shared__ V smem[kExperimentBytes / sizeof(V)];
  float* words = reinterpret_cast<float*>(smem);
  const unsigned lane = threadIdx.x;
  for (unsigned i = lane; i < kExperimentBytes / 4; i += 32) words[i] = static_cast<float>(i);
  const unsigned e = element[lane];
  __syncwarp();
  if ((active >> lane) & 1u) sink[lane] = sum(smem[e]);
}

template <typename V>
__global__ void shared_store_experiment(const unsigned* __restrict__ element, unsigned active,
                                        float* __restrict__ sink) {
  __shared__ V smem[kExperimentBytes / sizeof(V)];
  const float* words = reinterpret_cast<const float*>(smem);
  const unsigned lane = threadIdx.x;
  const unsigned e = element[lane];
  const bool on = (active >> lane) & 1u;
  if (on) smem[e] = make<V>(static_cast<float>(lane));
  __syncwarp();
  // Read back the first word this lane stored (4 bytes: the load counters, not the store
  // ones, see it), so the store is not dead code.
  if (on) sink[lane] = words[e * (sizeof(V) / 4)];
}

template <typename V>
void launch_experiment(bool store, const unsigned* element, unsigned active, float* sink, cudaStream_t stream) {
  if (store)
    shared_store_experiment<V><<<1, 32, 0, stream>>>(element, active, sink);
  else
    shared_load_experiment<V><<<1, 32, 0, stream>>>(element, active, sink);
  CUDA_CHECK_LAUNCH();
}

}  // namespace

dim3 tile_grid(int rows, int cols) {
  return dim3(static_cast<unsigned>((cols + kTile - 1) / kTile), static_cast<unsigned>((rows + kTile - 1) / kTile));
}

void copy_tiles(const float* in, float* out, int rows, int cols, cudaStream_t stream) {
  if (rows <= 0 || cols <= 0) return;
  copy_tiles_kernel<<<tile_grid(rows, cols), dim3(kTile, kBlockRows), 0, stream>>>(in, out, rows, cols);
  CUDA_CHECK_LAUNCH();
}

void transpose_naive(const float* in, float* out, int rows, int cols, cudaStream_t stream) {
  if (rows <= 0 || cols <= 0) return;
  transpose_naive_kernel<<<tile_grid(rows, cols), dim3(kTile, kBlockRows), 0, stream>>>(in, out, rows, cols);
  CUDA_CHECK_LAUNCH();
}

void run_experiment(bool store, unsigned width, const unsigned* element, unsigned active, float* sink,
                    cudaStream_t stream) {
  switch (width) {
    case 4: return launch_experiment<float>(store, element, active, sink, stream);
    case 8: return launch_experiment<float2>(store, element, active, sink, stream);
    case 16: return launch_experiment<float4>(store, element, active, sink, stream);
    default:
      throw std::invalid_argument("run_experiment: width must be 4, 8 or 16 bytes, not " + std::to_string(width));
  }
}

// =========================================================================================
// Part 2 — whole sectors: transpose_aligned
// =========================================================================================
//
// When the matrix's row length is not a multiple of 8 floats, the rows of `out` start at
// every alignment, and a warp writing 32 floats from a multiple of 32 covers five sectors:
// three whole and two partial ones, each partial sector completed by the neighbouring
// tile's block. Measured on the H200 at 8191², that cost the step 2-3 transposes a quarter
// of their speed, while misaligned reads cost a few per cent (docs/05_shared_memory.md,
// "Which side's misalignment costs"). Here each block writes, for row j of `out`, the 32
// floats that start at the sector boundary just before its tile: columns
// row0 - s .. row0 + 31 - s, s = (j * rows) % 8. It needs rows row0 - 8 .. row0 - 1 of `in`
// as well (read by the previous block too, which runs beside it: L2 serves them).

namespace {

constexpr int kSectorFloats = 8;                    // 32 bytes
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
__global__ void __launch_bounds__(kTile* kBlockRows)
    transpose_aligned_kernel(const float* __restrict__ in, float* __restrict__ out, int rows, int cols) {
  __shared__ float tile[kStagedRows][kTile + 1];  // the pad of step 2: column reads conflict-free
  const int tile_rows = (rows + kTile - 1) / kTile;
  const int row0 = static_cast<int>(blockIdx.x % tile_rows) * kTile;
  const int col0 = static_cast<int>(blockIdx.x / tile_rows) * kTile;
  // Rows of a multiple of 8 floats start on sector boundaries: no lead rows, s = 0.
  const bool lead = rows % kSectorFloats != 0;
  const bool whole = row0 >= kSectorFloats && row0 + kTile < rows && col0 + kTile <= cols;
  if (whole && lead)
    move_aligned_tile<true, true>(in, out, rows, cols, row0, col0, tile);
  else if (whole)
    move_aligned_tile<true, false>(in, out, rows, cols, row0, col0, tile);
  else if (lead)
    move_aligned_tile<false, true>(in, out, rows, cols, row0, col0, tile);
  else
    move_aligned_tile<false, false>(in, out, rows, cols, row0, col0, tile);
}

}  // namespace

void transpose_aligned(const float* in, float* out, int rows, int cols, cudaStream_t stream) {
  if (rows <= 0 || cols <= 0) return;
  const unsigned tiles =
      static_cast<unsigned>((rows + kTile - 1) / kTile) * static_cast<unsigned>((cols + kTile - 1) / kTile);
  transpose_aligned_kernel<<<tiles, dim3(kTile, kBlockRows), 0, stream>>>(in, out, rows, cols);
  CUDA_CHECK_LAUNCH();
}

}  // namespace ch05
