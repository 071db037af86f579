// Chapter 05 — shared memory, solved. The same file as chapters/05_shared_memory/exercise.cu
// with every TODO done; the comments say why each choice is made.
//
//   ./lab run 05 --solution          the chapter's program with this file
//   ./lab diff 05                    your file against this one (spoils the chapter)
#include "shared_memory.cuh"

#include "cml/arch.cuh"
#include "cml/errors.hpp"

#include <stdexcept>

// The solution's marker: the tests refuse a learner's build that contains it (this file
// copied or included in place of the learner's exercise.cu).
extern "C" const int cml_ch05_solution_tu = 1;

namespace ch05 {

namespace {

// Steps 1-3 share one kernel body; they differ only in where element (row, col) of the tile
// lives: a row pitch of T + Pad floats, and the column XORed with the row (mod 32) when
// Swizzle. For col < T and T a multiple of 32, col ^ (row % 32) permutes the columns of
// each row within their group of 32 (a bijection: nothing is lost), and it sends element
// `col` of 32 consecutive rows to 32 different banks.
//
// The tile is T x T floats, T = kSolutionTile, moved by 32 x 8 threads: T * T / 256
// elements per thread (4 for the classic 32 x 32 tile, 16 for 64 x 64). Bigger tiles put
// more loads in flight per thread but measured no faster: on the H200 the 32 x 32 tile beat
// the 64 x 64 one at 8192^2 and 8191^2, once the blocks ran in the order of tile_origin
// below (docs/05_shared_memory.md, "Speed bars: the measurements behind them").
constexpr int kSolutionTile = 32;
static_assert(kSolutionTile % kTile == 0, "the tile is a multiple of 32 floats per side");

// Which tile a block moves. The starter's tile_grid numbers blocks along the rows of `in`:
// the blocks resident together read long runs of `in` and write 128-byte pieces of many
// rows of `out`. Numbering them down the columns of tiles instead (block b takes tile row
// b % tile_rows, tile column b / tile_rows) turns that around: blocks that run together
// write long runs of `out`'s rows and read pieces of `in`. DRAM prefers the long runs on the
// write side, as we read the measurement: on the H200 the padded transpose went from
// 0.87-0.88 of cudaMemcpy (row order) to 0.92-0.93 at 8192^2 (docs/05_shared_memory.md,
// "Speed bars: the measurements behind them", has the rest and the recipe for the row
// order). When rows are not a multiple of 8 floats, the sector where two tiles meet in
// `out` is written half by one block and half by its neighbour; in this order the two run
// together, so at 8191^2 the transposes fall less than in row order, but they still fall
// (transpose_aligned, in provided.cu, shows what it takes).
// A 1D grid: no 65535 limit on either side.
struct TileOrigin {
  int row0, col0;
};
__device__ __forceinline__ TileOrigin tile_origin(int rows, int side) {
  const int tile_rows = (rows + side - 1) / side;
  return {static_cast<int>(blockIdx.x % tile_rows) * side, static_cast<int>(blockIdx.x / tile_rows) * side};
}

dim3 tiles_launch(int rows, int cols, int side) {
  const unsigned tile_rows = static_cast<unsigned>((rows + side - 1) / side);
  const unsigned tile_cols = static_cast<unsigned>((cols + side - 1) / side);
  return dim3(tile_rows * tile_cols);
}

// Where element (row, col) of the tile lives. row & (kTile - 1) is row % kTile for the
// row >= 0 it always is, in one instruction: written as a signed %, nvcc spent five per
// access on it, and on the H200 the swizzled kernel ran behind the padded one until the
// mask (and the whole-tile path below) brought it level (docs/05_shared_memory.md, "Speed
// bars: the measurements behind them").
template <int T, int Pad, bool Swizzle>
__device__ __forceinline__ int tile_index(int row, int col) {
  return row * (T + Pad) + (Swizzle ? (col ^ (row & (kTile - 1))) : col);
}

// One tile, in two passes through shared memory. Whole: the tile lies inside the matrix,
// so no access needs a bounds check; a tile at the matrix's edge takes the checked path
// (Whole = false). Without the split every access carries its own branch, and the write
// pass cannot issue its shared loads ahead of its global stores.
//
// At 8191^2 these kernels still fall to 0.66-0.74 of cudaMemcpy on the H200: most rows of
// `out` start inside a 32-byte sector, so each warp's 128-byte store covers two partial
// sectors. The chapter's transpose_aligned (provided.cu, part 2; docs/05_shared_memory.md,
// "Whole sectors: transpose_aligned") shows what it takes to avoid them, outside the
// mapping of threads that shared_memory.cuh fixes for steps 1-3.
template <int T, int Pad, bool Swizzle, bool Whole>
__device__ __forceinline__ void move_tile(const float* __restrict__ in, float* __restrict__ out, int rows, int cols,
                                          int row0, int col0, float* tile) {
  constexpr int kStrips = T / kTile;       // 32-column strips of the tile: one float per lane each
  constexpr int kRounds = T / kBlockRows;  // rows of a strip one thread moves
  const int x = static_cast<int>(threadIdx.x), y = static_cast<int>(threadIdx.y);
  const auto inside = [&](int r, int c, int r_end, int c_end) { return Whole || (r < r_end && c < c_end); };
  // Read: a warp (fixed y) takes 32 consecutive floats of one row of `in`. Every load is
  // issued before the first shared store, so all of a thread's loads are in flight at once.
  const float* src = in + static_cast<std::size_t>(row0 + y) * cols + col0 + x;
  float v[kStrips][kRounds] = {};
#pragma unroll
  for (int h = 0; h < kStrips; ++h)
#pragma unroll
    for (int k = 0; k < kRounds; ++k)
      if (inside(row0 + y + k * kBlockRows, col0 + x + h * kTile, rows, cols))
        v[h][k] = src[static_cast<std::size_t>(k * kBlockRows) * cols + h * kTile];
        // Stores along one row of the tile: 32 consecutive words, 32 banks.
#pragma unroll
  for (int h = 0; h < kStrips; ++h)
#pragma unroll
    for (int k = 0; k < kRounds; ++k)
      if (inside(row0 + y + k * kBlockRows, col0 + x + h * kTile, rows, cols))
        tile[tile_index<T, Pad, Swizzle>(y + k * kBlockRows, x + h * kTile)] = v[h][k];
  // Other warps wrote the tile's columns this warp is about to read.
  __syncthreads();
  // Write: the tile's column j becomes 32 consecutive floats of row col0 + j of `out`
  // (out is cols x rows). Reading a column of the tile is where the banks conflict:
  // without a pad or a swizzle its 32 words are T x 4 bytes apart, all in one bank.
#pragma unroll
  for (int h = 0; h < kStrips; ++h)
#pragma unroll
    for (int k = 0; k < kRounds; ++k)
      if (inside(col0 + y + k * kBlockRows, row0 + x + h * kTile, cols, rows))
        v[h][k] = tile[tile_index<T, Pad, Swizzle>(x + h * kTile, y + k * kBlockRows)];
  float* dst = out + static_cast<std::size_t>(col0 + y) * rows + row0 + x;
#pragma unroll
  for (int h = 0; h < kStrips; ++h)
#pragma unroll
    for (int k = 0; k < kRounds; ++k)
      if (inside(col0 + y + k * kBlockRows, row0 + x + h * kTile, cols, rows))
        dst[static_cast<std::size_t>(k * kBlockRows) * rows + h * kTile] = v[h][k];
}

template <int T, int Pad, bool Swizzle>
__device__ __forceinline__ void transpose_tile(const float* __restrict__ in, float* __restrict__ out, int rows,
                                               int cols) {
  __shared__ float tile[T * (T + Pad)];
  const auto [row0, col0] = tile_origin(rows, T);
  if (row0 + T <= rows && col0 + T <= cols)
    move_tile<T, Pad, Swizzle, true>(in, out, rows, cols, row0, col0, tile);
  else
    move_tile<T, Pad, Swizzle, false>(in, out, rows, cols, row0, col0, tile);
}

// 8 blocks of 256 threads fill an SM's 2048 threads only at 32 registers a thread or fewer
// (65536 registers): with 64 x 64 tiles (kSolutionTile = 64, an experiment of
// docs/05_shared_memory.md) nvcc gave the swizzled kernel 40 without the bound, and an SM
// held 6 blocks. (Step 4's kernel spills at 32: it keeps 40.) GPUs whose SMs hold fewer
// threads (1024 on sm_75, 1536 on sm_86) are asked for as many blocks as they hold.
constexpr int kBlocksPerSm = cml::arch::blocks_per_sm(kTile * kBlockRows, 8);

template <typename Kernel>
void launch_tiles(Kernel kernel, const float* in, float* out, int rows, int cols, cudaStream_t stream) {
  if (rows <= 0 || cols <= 0) return;
  kernel<<<tiles_launch(rows, cols, kSolutionTile), dim3(kTile, kBlockRows), 0, stream>>>(in, out, rows, cols);
  CUDA_CHECK_LAUNCH();
}

}  // namespace

// ---- Step 1 -----------------------------------------------------------------------------
__global__ void __launch_bounds__(kTile* kBlockRows, kBlocksPerSm)
    transpose_tiled_kernel(const float* __restrict__ in, float* __restrict__ out, int rows, int cols) {
  transpose_tile<kSolutionTile, 0, false>(in, out, rows, cols);
}

void transpose_tiled(const float* in, float* out, int rows, int cols, cudaStream_t stream) {
  launch_tiles(transpose_tiled_kernel, in, out, rows, cols, stream);
}

// ---- Step 2 -----------------------------------------------------------------------------
// One float of pad per row: row i starts at word (T + 1) i, so a column's 32 words fall in
// banks (i (T + 1) + c) % 32 = (i + c) % 32 for T a multiple of 32, all different. The pad
// goes on the rows (the second dimension): a pad row at the end would change nothing.
__global__ void __launch_bounds__(kTile* kBlockRows, kBlocksPerSm)
    transpose_padded_kernel(const float* __restrict__ in, float* __restrict__ out, int rows, int cols) {
  transpose_tile<kSolutionTile, 1, false>(in, out, rows, cols);
}

void transpose_padded(const float* in, float* out, int rows, int cols, cudaStream_t stream) {
  launch_tiles(transpose_padded_kernel, in, out, rows, cols, stream);
}

// ---- Step 3 -----------------------------------------------------------------------------
__global__ void __launch_bounds__(kTile* kBlockRows, kBlocksPerSm)
    transpose_swizzled_kernel(const float* __restrict__ in, float* __restrict__ out, int rows, int cols) {
  transpose_tile<kSolutionTile, 0, true>(in, out, rows, cols);
}

void transpose_swizzled(const float* in, float* out, int rows, int cols, cudaStream_t stream) {
  launch_tiles(transpose_swizzled_kernel, in, out, rows, cols, stream);
}

// ---- Step 4 -----------------------------------------------------------------------------
// A 64 x 64 tile held as 64 rows of 16 float4, 256 threads. Each thread reads four float4
// of `in` (rows of the tile), and later writes a 4 x 4 block of the transpose: it loads
// four float4 of four consecutive tile rows, transposes them in registers, and stores four
// float4 to four rows of `out`.
//
// The layout: a quarter-warp's 16-byte loads are conflict-free when its 8 lanes cover the
// 32 banks once. In the write phase lanes a = 0..7 of a quarter read rows 4a + i at the
// same float4 column b: 1 KiB apart, all in the same four banks (8-way). A pad cannot fix
// that here (the row pitch must stay a multiple of 16 bytes, and 4 pitches = 4 words mod
// 32 would need a pitch of 1 word mod 8): so swizzle at float4 granularity, column b of row
// r stored at b ^ ((r / 4) % 8). Lanes a = 0..7 then hit columns b ^ a: 8 different groups
// of four banks. In the read phase a quarter-warp stores 8 consecutive float4 of one row,
// and XOR with a value below 8 keeps them in the same 128 bytes: conflict-free as well.
constexpr int kWideTile = 64;
constexpr int kWideVecs = kWideTile / 4;  // float4 per tile row
constexpr int kWideThreads = 256;

__device__ __forceinline__ int wide_column(int row, int vec) { return vec ^ ((row / 4) % 8); }

__global__ void transpose_wide_kernel(const float4* __restrict__ in, float4* __restrict__ out, int rows, int cols) {
  __shared__ float4 tile[kWideTile][kWideVecs];
  const int t = threadIdx.x;
  const auto [row0, col0] = tile_origin(rows, kWideTile);  // in the same order as steps 1-3
  const int vecs_in = cols / 4, vecs_out = rows / 4;       // float4 per row of in, of out
  // Read: 16 lanes cover one tile row (256 contiguous bytes), a warp two rows.
  for (int r = t / kWideVecs; r < kWideTile; r += kWideThreads / kWideVecs) {
    const int v = t % kWideVecs;
    if (row0 + r < rows && col0 + 4 * v < cols)
      tile[r][wide_column(r, v)] = in[static_cast<std::size_t>(row0 + r) * vecs_in + col0 / 4 + v];
  }
  __syncthreads();
  // Write: lane a (consecutive lanes) takes tile rows 4a..4a+3, so 16 lanes write 256
  // contiguous bytes of one row of `out`; b picks the tile's float4 column.
  const int a = t % kWideVecs, b = t / kWideVecs;
  if (row0 + 4 * a >= rows || col0 + 4 * b >= cols) return;  // rows, cols: multiples of 4
  // Rows 4a .. 4a + 3 share their swizzle ((row / 4) % 8 is a for all four): one column
  // for the four loads, which then differ by whole rows, constant offsets of one address.
  // Asked per row, the compiler cannot see that and computes four addresses.
  const int c = wide_column(4 * a, b);
  const float4 v0 = tile[4 * a + 0][c];
  const float4 v1 = tile[4 * a + 1][c];
  const float4 v2 = tile[4 * a + 2][c];
  const float4 v3 = tile[4 * a + 3][c];
  // Column k of the 4 x 4 block is row k of its transpose.
  const std::size_t o = static_cast<std::size_t>(col0 + 4 * b) * vecs_out + (row0 / 4 + a);
  out[o] = make_float4(v0.x, v1.x, v2.x, v3.x);
  out[o + vecs_out] = make_float4(v0.y, v1.y, v2.y, v3.y);
  out[o + 2 * static_cast<std::size_t>(vecs_out)] = make_float4(v0.z, v1.z, v2.z, v3.z);
  out[o + 3 * static_cast<std::size_t>(vecs_out)] = make_float4(v0.w, v1.w, v2.w, v3.w);
}

void transpose_wide(const float* in, float* out, int rows, int cols, cudaStream_t stream) {
  if (rows % 4 != 0 || cols % 4 != 0)
    throw std::invalid_argument("transpose_wide: rows and cols must be multiples of 4");
  if (rows <= 0 || cols <= 0) return;
  const dim3 grid = tiles_launch(rows, cols, kWideTile);
  transpose_wide_kernel<<<grid, kWideThreads, 0, stream>>>(reinterpret_cast<const float4*>(in),
                                                           reinterpret_cast<float4*>(out), rows, cols);
  CUDA_CHECK_LAUNCH();
}

}  // namespace ch05
