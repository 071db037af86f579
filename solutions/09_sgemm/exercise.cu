// Chapter 09 — a tiled SGEMM, solved. The same file as chapters/09_sgemm/exercise.cu with
// every TODO done; the comments say why each choice is made.
//
//   ./lab run 09 --solution          the chapter's program with this file
//   ./lab diff 09                    your file against this one (spoils the chapter)
#include "sgemm.cuh"

#include "cml/arch.cuh"
#include "cml/device.hpp"
#include "cml/errors.hpp"
#include "cml/ptx.cuh"

#include <cuda.h>  // CUtensorMap

#include <climits>
#include <cstdint>
#include <cstdio>
#include <stdexcept>
#include <string>
#include <type_traits>

// The solution's marker: the tests refuse a learner's build that contains it (this file
// copied or included in place of the learner's exercise.cu).
extern "C" const int cml_ch09_solution_tu = 1;

// Step 5's instructions (cp.async) exist from sm_80 on, step 6's (mbarrier transaction
// counts, tensor copies) from sm_90 on (cml/arch.cuh). The build may also target older GPUs,
// where those kernels compile to a trap: the course's needs.txt keeps those GPUs from them
// (the tests skip the step, the program leaves the kernel out), and sgemm_tma refuses them.

namespace ch09 {

namespace {

using namespace cml::ptx;  // chapter 08's PTX wrappers: cp.async groups, mbarriers, TMA loads

__host__ __device__ constexpr int ceil_div(int a, int b) { return (a + b - 1) / b; }

// Every kernel runs on a 1D grid of tiles: blockIdx.x has no 65535 limit, so any m and n
// launch (a 2D grid's y would stop at 65535 tiles of rows).
unsigned tile_blocks(int m, int n, int tile_m, int tile_n) {
  const long long tiles = static_cast<long long>(ceil_div(m, tile_m)) * ceil_div(n, tile_n);
  if (tiles > INT_MAX) throw std::invalid_argument("ch09: C has more tiles than a grid can launch");
  return static_cast<unsigned>(tiles);
}

// ==== Steps 1 and 2: 32 x 32 tiles, 32 x 8 threads ========================================
// The block shape of chapter 05: a warp is one row of 32 threads, so a warp's load of a
// tile row reads 32 consecutive floats of one matrix row (one 128-byte request). Each
// thread computes 4 elements of one column of C (rows y, y + 8, y + 16, y + 24), so each
// float of the B tile it loads from shared memory serves 4 multiply-adds.
constexpr int kTile = 32;
constexpr int kTileRows = 8;
constexpr int kTileThreads = kTile * kTileRows;
constexpr int kPerThread = kTile / kTileRows;
// At least 4 blocks per SM, so at most 64 registers a thread. The unrolled k loop invites
// nvcc to load far ahead of use: bounded by the block size alone, nvcc 13.0 kept few
// registers for the kernel and spilled the values its epilogue needs to local memory.
constexpr int kTileBlocksPerSm = 4;

// ==== Steps 3-6: a micro-tile of C per thread =============================================
// What sets each step's kernel apart, named in one type: the tile of C a block computes,
// the piece a warp owns (0 x 0: no warp tile, step 3's plain layout), a thread's micro-tile,
// the k a stage holds, how many stages (1: load then compute; 2: the next tile in registers
// or a second buffer), and the blocks an SM runs at once (which caps the registers: 2 of 256
// threads leave 128 a thread). Per k a thread loads MicroM floats of A and MicroN of B from
// shared memory and does MicroM x MicroN multiply-adds with them, where step 1 did one
// shared load per multiply-add.
template <int BlockM, int BlockN, int Threads, int WarpM, int WarpN, int MicroM, int MicroN, int BK, int Stages,
          int BlocksPerSm>
struct Tiles {
  static constexpr int kBlockM = BlockM, kBlockN = BlockN, kThreads = Threads;
  static constexpr int kWarpM = WarpM, kWarpN = WarpN, kWarpsN = WarpN > 0 ? BlockN / WarpN : 0;
  static constexpr int kMicroM = MicroM, kMicroN = MicroN;
  static constexpr int kBK = BK, kStages = Stages, kBlocksPerSm = BlocksPerSm;
  static_assert(kWarpM >= 0 && kWarpN >= 0 && kWarpsN >= 0 && kMicroM > 0 && kMicroN > 0 && kStages > 0,
                "a step reads some only");
  static_assert(BlockM * BlockN == Threads * MicroM * MicroN, "the threads' micro-tiles cover the block's tile");
  static_assert(WarpN == 0 || (BlockM / WarpM) * (BlockN / WarpN) * 32 == Threads, "one warp per piece");
};
//                    block      threads  warp    thread  k   stages  blocks/SM
using RegisterTiles = Tiles<128, 128, 256, 0, 0, 8, 8, 8, 1, 2>;     // step 3
using WarpTiles = Tiles<128, 128, 256, 64, 32, 8, 8, 8, 1, 2>;       // step 4
using PipeTiles = Tiles<128, 128, 256, 64, 32, 8, 8, 16, 4, 2>;      // step 5
using TmaTiles = Tiles<128, 256, 256, 64, 64, 8, 16, 32, 4, 1>;      // step 6 (2 stages where 4 do not fit)
using TmaMidTiles = Tiles<128, 192, 256, 64, 48, 8, 12, 32, 4, 1>;   // step 6 where wide tiles leave a wave empty
using TmaSmallTiles = Tiles<128, 128, 256, 64, 32, 8, 8, 32, 3, 2>;  // step 6 on small problems

// Which tile of C a block computes. In row order, the blocks resident at one time on a C
// many tiles wide read a few row panels of A against all of B's column panels; here
// consecutive blocks walk down a band of kGroup tile rows first, so the resident blocks
// cover a squarer patch of C and reuse more of what they read through L2.
struct TileOrigin {
  int row0, col0;
};
// In row order: block b takes tile b of C read row by row, ceil(n / block_n) tiles to a row.
__device__ __forceinline__ TileOrigin row_order_tile(int n, int block_m, int block_n) {
  const int tiles_n = ceil_div(n, block_n), b = static_cast<int>(blockIdx.x);
  return {b / tiles_n * block_m, b % tiles_n * block_n};
}
template <class T>
__device__ __forceinline__ TileOrigin grouped_tile(int m, int n) {
  constexpr int kGroup = 8, BlockM = T::kBlockM, BlockN = T::kBlockN;
  const int tiles_m = ceil_div(m, BlockM), tiles_n = ceil_div(n, BlockN);
  const int b = static_cast<int>(blockIdx.x), per_group = kGroup * tiles_n;
  const int first = b / per_group * kGroup;
  const int height = min(tiles_m - first, kGroup);
  const int in_group = b % per_group;
  return {(first + in_group % height) * BlockM, in_group / height * BlockN};
}

// Floats row[col .. col + 3] of a matrix row `cols` long, zeros from `cols` on. col is a
// multiple of 4 and rows start on 16 bytes (ld % 4 == 0), so a whole piece is one 16-byte
// load; only a piece the row ends inside takes the scalar path.
__device__ __forceinline__ float4 load4(const float* __restrict__ row, int col, int cols) {
  if (col + 4 <= cols) return *reinterpret_cast<const float4*>(row + col);
  float4 v = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
  if (col < cols) v.x = row[col];
  if (col + 1 < cols) v.y = row[col + 1];
  if (col + 2 < cols) v.z = row[col + 2];
  return v;
}

// The same for a store: only columns below `cols` are written, so a pad column never is.
__device__ __forceinline__ void store4(float* __restrict__ row, int col, int cols, const float* v) {
  if (col + 4 <= cols) {
    *reinterpret_cast<float4*>(row + col) = make_float4(v[0], v[1], v[2], v[3]);
    return;
  }
#pragma unroll
  for (int j = 0; j < 3; ++j)
    if (col + j < cols) row[col + j] = v[j];
}

__device__ __forceinline__ void unpack(const float4& v, float* out) {
  out[0] = v.x;
  out[1] = v.y;
  out[2] = v.z;
  out[3] = v.w;
}

// ---- Steps 3 and 4's tiles --------------------------------------------------------------------
// A's tile is stored transposed (as[p][row]): the 4 consecutive rows a thread needs at one k
// are then 4 consecutive words, one 16-byte load. The 4-float pad makes the transposing
// stores conflict-free: a warp stores 16 rows at k-offsets 0 and 4, and 4 rows of 132
// floats put the second half 16 banks further.
template <class T>
constexpr int kTransposedPitch = T::kBlockM + 4;
// One float4 of A (128 rows x 2 pieces) and one of B (8 rows x 32 pieces) per thread.
static_assert(RegisterTiles::kBlockM * RegisterTiles::kBK / 4 == RegisterTiles::kThreads &&
                  RegisterTiles::kBK * RegisterTiles::kBlockN / 4 == RegisterTiles::kThreads &&
                  WarpTiles::kBK == RegisterTiles::kBK && WarpTiles::kBlockM == RegisterTiles::kBlockM,
              "steps 3 and 4: one piece of each tile per thread");

// How steps 3 and 4 fill their tiles: thread `tid` copies the 16-byte piece of A at row
// tid / 2, k-columns 4 (tid % 2).., storing it transposed, and the piece of B at row tid / 32,
// columns 4 (tid % 32)..; zeros past the matrix. The barriers are the caller's.
template <class T>
struct TransposedTiles {
  static constexpr int kAPitch = kTransposedPitch<T>;
  int a_row, a_col, b_row, b_col;
  bool a_inside;
  const float* a_src;
  __device__ TransposedTiles(const float* a, int lda, int m, int row0, int tid)
      : a_row(tid / 2),
        a_col(tid % 2 * 4),
        b_row(tid / 32),
        b_col(tid % 32 * 4),
        a_inside(row0 + a_row < m),
        a_src(a + static_cast<std::size_t>(a_inside ? row0 + a_row : 0) * lda) {}
  // The tiles of k-columns p0 .. p0 + kBK - 1 into as and bs.
  __device__ __forceinline__ void store(const float* __restrict__ b, int ldb, int n, int k, int col0, int p0,
                                        float (&as)[T::kBK][kAPitch], float (&bs)[T::kBK][T::kBlockN]) const {
    const float4 av = a_inside ? load4(a_src, p0 + a_col, k) : make_float4(0.0f, 0.0f, 0.0f, 0.0f);
    const int p = p0 + b_row;
    const float4 bv =
        p < k ? load4(b + static_cast<std::size_t>(p) * ldb, col0 + b_col, n) : make_float4(0.0f, 0.0f, 0.0f, 0.0f);
    as[a_col + 0][a_row] = av.x;  // transposed: a column of A's tile becomes a row
    as[a_col + 1][a_row] = av.y;
    as[a_col + 2][a_row] = av.z;
    as[a_col + 3][a_row] = av.w;
    *reinterpret_cast<float4*>(&bs[b_row][b_col]) = bv;
  }
};

// ---- Steps 5 and 6: the same computation, fed by a pipeline --------------------------------
// cp.async and TMA copy bytes as they lie: A's tile arrives as rows of A (as[row][p]), not
// transposed. A thread then takes A(row, p .. p + 3) as one 16-byte load and uses its four
// floats for four successive k: per 4 k, 8 LDS.128 of A (one per row) and 8 of B, for 256
// FFMA, as in step 3. Its 8 rows are 8 apart (lane_row + 8 i), so the 8 rows a warp loads
// at once are consecutive: a pad or a swizzle can then give them 8 different 16-byte bank
// groups (with runs of 4 rows, as in step 3, no pad can).
// (Steps 5 and 6 only: compiled where their instructions exist.)
#if CML_ARCH_HAS_CP_ASYNC
template <class T>
__device__ __forceinline__ int pipe_first_row(int warp, int lane) {
  return (warp / T::kWarpsN) * T::kWarpM + lane / 4;
}
#endif
template <class T>
__device__ __forceinline__ int pipe_first_col(int warp, int lane) {
  return (warp % T::kWarpsN) * T::kWarpN + lane % 4 * 4;
}

// One stage's worth of k (T::kBK) into acc. as: the stage's A tile, rows of APitch floats;
// `swizzle` is the XOR the copy applied to the 16-byte piece index of this thread's rows (0
// where a pad does the work). bs: B's tile, rows of T::kBlockN floats.
template <class T, int APitch>
__device__ __forceinline__ void multiply_stage(const float* as, const float* bs, int am, int bn, int swizzle,
                                               float (&acc)[T::kMicroM][T::kMicroN]) {
  constexpr int BK = T::kBK, MicroN = T::kMicroN, BlockN = T::kBlockN, kMicro = T::kMicroM;
#pragma unroll
  for (int q = 0; q < BK / 4; ++q) {
    float af[kMicro][4];
#pragma unroll
    for (int i = 0; i < kMicro; ++i)
      unpack(*reinterpret_cast<const float4*>(as + (am + 8 * i) * APitch + 4 * (q ^ swizzle)), af[i]);
#pragma unroll
    for (int kk = 0; kk < 4; ++kk) {
      float bv[MicroN];
      const float* const brow = bs + (4 * q + kk) * BlockN + bn;
      if constexpr (MicroN == 8) {  // written out: the loop below schedules step 5 differently, 5 % slower (docs/09)
        unpack(*reinterpret_cast<const float4*>(brow), bv);
        unpack(*reinterpret_cast<const float4*>(brow + 16), bv + 4);
      } else {
#pragma unroll
        for (int jj = 0; jj < MicroN / 4; ++jj) unpack(*reinterpret_cast<const float4*>(brow + 16 * jj), bv + 4 * jj);
      }
#pragma unroll
      for (int i = 0; i < kMicro; ++i)
#pragma unroll
        for (int j = 0; j < MicroN; ++j) acc[i][j] = fmaf(af[i][kk], bv[j], acc[i][j]);
    }
  }
}

template <class T>
__device__ __forceinline__ void store_pipe_tile(float* __restrict__ c, int ldc, int m, int n, int row, int col,
                                                const float (&acc)[T::kMicroM][T::kMicroN]) {
  constexpr int MicroN = T::kMicroN, kMicro = T::kMicroM;
#pragma unroll
  for (int i = 0; i < kMicro; ++i) {
    const int r = row + 8 * i;
    if (r >= m) continue;
    float* out = c + static_cast<std::size_t>(r) * ldc;
#pragma unroll
    for (int jj = 0; jj < MicroN / 4; ++jj) store4(out, col + 16 * jj, n, acc[i] + 4 * jj);
  }
}

// ---- Step 5's tiles and copies ---------------------------------------------------------------
// Step 5's layout in shared memory, from PipeTiles.
namespace pipe {
using T = PipeTiles;
// Rows of 20 floats = 5 pieces of 16 bytes: 8 consecutive rows start in 8 different
// 16-byte bank groups (5 r mod 8 for r = 0..7), and every row stays 16-byte aligned for
// the copies and the loads.
constexpr int kAPitch = T::kBK + 4;
constexpr int kAFloats = T::kBlockM * kAPitch, kBFloats = T::kBK * T::kBlockN;
constexpr int kStageFloats = kAFloats + kBFloats;
constexpr int kSmemBytes = T::kStages * kStageFloats * static_cast<int>(sizeof(float));  // 72 KiB
// The tiles in 16-byte pieces: A's rows have kBK / 4, B's kBlockN / 4. Thread `me` copies
// piece me % per_row of row me / per_row, then the same piece kThreads / per_row rows below.
constexpr int kAPerRow = T::kBK / 4, kBPerRow = T::kBlockN / 4;
constexpr int kAPieces = T::kBlockM * kAPerRow / T::kThreads, kBPieces = T::kBK * kBPerRow / T::kThreads;
static_assert(kAPieces * T::kThreads == T::kBlockM * kAPerRow && kBPieces * T::kThreads == T::kBK * kBPerRow,
              "the tiles split into whole 16-byte pieces per thread");
}  // namespace pipe

#if CML_ARCH_HAS_CP_ASYNC
// cp.async.cg: 16 bytes from global memory straight into shared memory, cached in L2 only
// (a block reads each piece once). src_bytes (0..16) are read and the rest of the 16 land
// as zeros: a ragged edge is filled by the copy itself (SASS: LDGSTS.E.BYPASS.128.ZFILL).
__device__ __forceinline__ void cp_async16(void* dst, const void* src, int src_bytes) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(
                   static_cast<std::uint32_t>(__cvta_generic_to_shared(dst))),
               "l"(__cvta_generic_to_global(src)), "r"(src_bytes)
               : "memory");
}
// threadIdx.x, read by an instruction the compiler may not hoist or reuse: what is computed
// from it is computed again where it is used, instead of being kept in registers.
__device__ __forceinline__ unsigned thread_index_again() {
  unsigned tid;
  asm volatile("mov.u32 %0, %%tid.x;" : "=r"(tid));
  return tid;
}

// How many of the 16 bytes from column `col` of a row `cols` long exist: 16, 4-12 where the
// row ends inside the piece, 0 past its end.
__device__ __forceinline__ int piece_bytes(int col, int cols) {
  const int left = cols - col;
  return left <= 0 ? 0 : left >= 4 ? 16 : 4 * left;
}
#endif  // CML_ARCH_HAS_CP_ASYNC

// ---- Step 6's tiles, barriers and copies -----------------------------------------------------
// Step 6's boxes and barriers, from a Tiles configuration: TmaTiles, a block tile of 128 x 256
// at one block per SM, 8 x 16 results a thread (warps 2 x 4, each 64 x 64), with 4 stages of
// 48 KiB; or, where a problem has fewer of those tiles than the GPU has SMs, TmaSmallTiles:
// 128 x 128 at two blocks an SM, 8 x 8 a thread, 3 stages of 32 KiB (docs/09_sgemm.md).
namespace tma {
// 4 stages where a block may have 193 KiB of shared memory (sm_90, sm_100: 227 KiB), 2 where
// it may not (sm_120: 99 KiB); sgemm_tma picks by the GPU's limit.
constexpr int kFewStages = 2;
// The 128-byte swizzle repeats every 1024 bytes and follows the shared address itself: the
// stages start on 1024 bytes (the dynamic buffer is aligned up at run time, hence the
// slack), and each box is a multiple of 1024 bytes.
constexpr int kAlign = 1024;
template <class T>
struct Layout {
  // A's box is 32 floats wide: each of its rows is exactly 128 bytes, the span of the
  // 128-byte swizzle. The TMA unit stores the 16-byte piece j of row r at piece
  // j ^ (r % 8), so the 8 consecutive rows a warp reads at one k (all in the same bank group
  // unswizzled) land in 8 different groups. B's rows are read along themselves, 4
  // neighbouring pieces at a time: no swizzle needed (nor possible: a swizzled box row is at
  // most 128 bytes).
  static constexpr int kSwizzleBytes = T::kBK * static_cast<int>(sizeof(float));
  static_assert(kSwizzleBytes == 128, "A's box rows span exactly one 128-byte swizzle");
  static constexpr int kAFloats = T::kBlockM * T::kBK, kBFloats = T::kBK * T::kBlockN;
  static constexpr int kStageFloats = kAFloats + kBFloats;
  static constexpr unsigned kStageBytes = kStageFloats * sizeof(float);  // what one stage's two boxes deliver
  static constexpr int smem_bytes(int stages) { return stages * static_cast<int>(kStageBytes) + kAlign; }
  static_assert(kAFloats * sizeof(float) % kAlign == 0 && kStageBytes % kAlign == 0, "boxes stay 1024-byte aligned");
  // A box dimension is at most 256 elements, and its rows a multiple of 16 bytes.
  static_assert(T::kBK <= 256 && T::kBlockM <= 256 && T::kBlockN <= 256 && T::kBlockN * sizeof(float) % 16 == 0,
                "TMA box rules");
};
}  // namespace tma

#if CML_ARCH_HAS_TMA
// The sm_90 instructions, compiled for sm_90 and later only (step 6's kernel uses them under
// the same condition).

// A phase lands in microseconds; one that has not completed after 4 s never will.
constexpr unsigned long long kWaitLimitNs = 4'000'000'000ull;

// What a thread says before it traps: which barrier of which stage never completed. A
// printf with arguments passes them through a buffer in local memory, which this kernel
// keeps none of (its SASS has no STL: the tests check), so each message is a literal.
#define CH09_GAVE_UP(barrier, s)                                  \
  printf("sgemm_tma_kernel: the " barrier " barrier of stage " #s \
         " did not complete"                                      \
         " in 4 s (a byte count, a parity or an arrival that never comes)\n")
__device__ __noinline__ void give_up(bool full, int stage) {
  static_assert(TmaTiles::kStages <= 4 && TmaSmallTiles::kStages <= 4, "one message per stage below");
  switch (stage) {
    case 0: full ? CH09_GAVE_UP("full", 0) : CH09_GAVE_UP("empty", 0); break;
    case 1: full ? CH09_GAVE_UP("full", 1) : CH09_GAVE_UP("empty", 1); break;
    case 2: full ? CH09_GAVE_UP("full", 2) : CH09_GAVE_UP("empty", 2); break;
    default: full ? CH09_GAVE_UP("full", 3) : CH09_GAVE_UP("empty", 3); break;
  }
  __trap();
}
#undef CH09_GAVE_UP

// The slow path of a wait, out of line so that its loop stays out of the kernel's hot code:
// a phase that never completes (a byte count that does not match the boxes, a wrong parity,
// a missing arrival) ends the kernel with a message naming the barrier and the stage
// instead of hanging.
__device__ __noinline__ void wait_slowly(std::uint64_t* bar, unsigned parity, bool full, int stage) {
  const unsigned long long start = global_ns();
  for (unsigned tries = 1;; ++tries) {
    if (mbarrier_try_wait_parity(bar, parity)) return;
    if (tries % 64 == 0 && global_ns() - start >= kWaitLimitNs) give_up(full, stage);
  }
}

__device__ __forceinline__ void wait_phase(std::uint64_t* bar, unsigned parity, bool full, int stage) {
  if (!mbarrier_try_wait_parity(bar, parity)) wait_slowly(bar, parity, full, stage);
}
#endif  // CML_ARCH_HAS_TMA

// Past 48 KiB a block's dynamic shared memory must be asked for, once per kernel.
template <typename Kernel>
bool allow_shared(Kernel kernel, int bytes) {
  CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, bytes));
  return true;
}

// The tensor map of a rows x cols view, in boxes of box_rows x box_cols. Its dimensions are
// the matrix's, not the leading dimension's: the TMA unit zero-fills a box's columns
// past `cols` (the pad is never read) and its rows past `rows`. The row stride, ld x 4
// bytes, is a multiple of 16 as TMA requires, because ld is a multiple of 4.
CUtensorMap tensor_map(const float* data, int rows, int cols, int ld, int box_rows, int box_cols,
                       CUtensorMapSwizzle swizzle) {
  if (reinterpret_cast<std::uintptr_t>(data) % 16 != 0)
    throw std::invalid_argument("sgemm_tma: TMA needs each matrix to start on a 16-byte boundary");
  CUtensorMap map{};
  const cuuint64_t dims[2] = {static_cast<cuuint64_t>(cols), static_cast<cuuint64_t>(rows)};
  const cuuint64_t strides[1] = {static_cast<cuuint64_t>(ld) * sizeof(float)};
  const cuuint32_t box[2] = {static_cast<cuuint32_t>(box_cols), static_cast<cuuint32_t>(box_rows)};
  const cuuint32_t element_strides[2] = {1, 1};
  const CUresult r = tensor_map_encoder("sgemm_tma")(
      &map, CU_TENSOR_MAP_DATA_TYPE_FLOAT32, 2, const_cast<float*>(data), dims, strides, box, element_strides,
      CU_TENSOR_MAP_INTERLEAVE_NONE, swizzle, CU_TENSOR_MAP_L2_PROMOTION_L2_128B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
  if (r != CUDA_SUCCESS)
    throw std::runtime_error("sgemm_tma: cuTensorMapEncodeTiled refused a " + std::to_string(rows) + " x " +
                             std::to_string(cols) + " view (ld " + std::to_string(ld) + "): CUresult " +
                             std::to_string(static_cast<int>(r)));
  return map;
}

}  // namespace

// Every launcher checks the shapes first (nothing is enqueued before a mismatch throws),
// enqueues nothing for an empty C, and otherwise launches one kernel on `stream`. k = 0
// needs no special case: the kernels' k loops run no iteration and store their zero
// accumulators.

// ---- Step 1 -----------------------------------------------------------------------------
__global__ void __launch_bounds__(kTileThreads, kTileBlocksPerSm)
    sgemm_tiled_kernel(const float* __restrict__ a, int lda, const float* __restrict__ b, int ldb,
                       float* __restrict__ c, int ldc, int m, int n, int k) {
  __shared__ float as[kTile][kTile];  // as[r][p] = A(row0 + r, p0 + p)
  __shared__ float bs[kTile][kTile];  // bs[p][x] = B(p0 + p, col0 + x)
  const auto [row0, col0] = row_order_tile(n, kTile, kTile);
  const int x = static_cast<int>(threadIdx.x), y = static_cast<int>(threadIdx.y);
  float acc[kPerThread] = {};
  for (int p0 = 0; p0 < k; p0 += kTile) {
    // Outside the matrix the tiles hold zeros: a zero term changes no sum, so the compute
    // loop below needs no bounds check and k need not be a multiple of 32.
#pragma unroll
    for (int i = 0; i < kPerThread; ++i) {
      const int r = y + i * kTileRows;
      as[r][x] = row0 + r < m && p0 + x < k ? a[static_cast<std::size_t>(row0 + r) * lda + p0 + x] : 0.0f;
      bs[r][x] = p0 + r < k && col0 + x < n ? b[static_cast<std::size_t>(p0 + r) * ldb + col0 + x] : 0.0f;
    }
    __syncthreads();  // every thread reads elements other threads stored
                      // as[y + 8i][p] is one word for the whole warp (a broadcast), bs[p][x] 32 consecutive
                      // words: neither load conflicts.
#pragma unroll
    for (int p = 0; p < kTile; ++p) {
      const float bv = bs[p][x];
#pragma unroll
      for (int i = 0; i < kPerThread; ++i) acc[i] = fmaf(as[y + i * kTileRows][p], bv, acc[i]);
    }
    __syncthreads();  // nobody overwrites the tiles while another thread still reads them
  }
#pragma unroll
  for (int i = 0; i < kPerThread; ++i) {
    const int r = row0 + y + i * kTileRows, col = col0 + x;
    if (r < m && col < n) c[static_cast<std::size_t>(r) * ldc + col] = acc[i];
  }
}

void sgemm_tiled(ConstView a, ConstView b, View c, cudaStream_t stream) {
  check_gemm_shapes("sgemm_tiled", a, b, c);
  const int m = c.rows, n = c.cols, k = a.cols;
  if (m == 0 || n == 0) return;
  sgemm_tiled_kernel<<<tile_blocks(m, n, kTile, kTile), dim3(kTile, kTileRows), 0, stream>>>(a.data, a.ld, b.data, b.ld,
                                                                                             c.data, c.ld, m, n, k);
  CUDA_CHECK_LAUNCH();
}

// ---- Step 2 -----------------------------------------------------------------------------
// c(i, j) = sum over p of a(i, p) a(j, p): both tiles are row blocks of A, loaded exactly
// like step 1's A tile (along k, coalesced). The second one plays Aᵀ: thread x needs row x
// of it, so a warp reads one column of the tile, 32 rows at a time. In a [32][32] tile those
// 32 words are 128 bytes apart, all in one bank; with a row pitch of 33 floats, row x starts
// in bank x % 32 and the column covers all 32 banks. The first tile is read as a broadcast
// (one row per warp) and keeps its 32 columns.
__global__ void __launch_bounds__(kTileThreads, kTileBlocksPerSm)
    gram_tiled_kernel(const float* __restrict__ a, int lda, float* __restrict__ c, int ldc, int m, int k) {
  __shared__ float rows_i[kTile][kTile];                      // rows_i[r][p] = A(row0 + r, p0 + p)
  __shared__ float rows_j[kTile][kTile + 1];                  // rows_j[r][p] = A(col0 + r, p0 + p), padded
  const auto [row0, col0] = row_order_tile(m, kTile, kTile);  // C is m x m
  const int x = static_cast<int>(threadIdx.x), y = static_cast<int>(threadIdx.y);
  float acc[kPerThread] = {};
  for (int p0 = 0; p0 < k; p0 += kTile) {
    const bool in_k = p0 + x < k;
#pragma unroll
    for (int i = 0; i < kPerThread; ++i) {
      const int r = y + i * kTileRows;
      rows_i[r][x] = row0 + r < m && in_k ? a[static_cast<std::size_t>(row0 + r) * lda + p0 + x] : 0.0f;
      rows_j[r][x] = col0 + r < m && in_k ? a[static_cast<std::size_t>(col0 + r) * lda + p0 + x] : 0.0f;
    }
    __syncthreads();
#pragma unroll
    for (int p = 0; p < kTile; ++p) {
      const float aj = rows_j[x][p];  // lanes x = 0..31: words 33 x + p, 32 banks
#pragma unroll
      for (int i = 0; i < kPerThread; ++i) acc[i] = fmaf(rows_i[y + i * kTileRows][p], aj, acc[i]);
    }
    __syncthreads();
  }
#pragma unroll
  for (int i = 0; i < kPerThread; ++i) {
    const int r = row0 + y + i * kTileRows, col = col0 + x;
    if (r < m && col < m) c[static_cast<std::size_t>(r) * ldc + col] = acc[i];
  }
}

void gram_tiled(ConstView a, View c, cudaStream_t stream) {
  check_gram_shapes("gram_tiled", a, c);
  const int m = c.rows, k = a.cols;
  if (m == 0) return;
  gram_tiled_kernel<<<tile_blocks(m, m, kTile, kTile), dim3(kTile, kTileRows), 0, stream>>>(a.data, a.ld, c.data, c.ld,
                                                                                            m, k);
  CUDA_CHECK_LAUNCH();
}

// ---- Step 3 -----------------------------------------------------------------------------
// Register blocking alone, laid out the plain way. The 256 threads stand 16 x 16 over the
// 128 x 128 tile: thread (ty, tx) computes rows 8 ty .. 8 ty + 7 and columns 8 tx .. 8 tx + 7.
// At one k it loads two 16-byte pieces of A (a column of its tile, stored as a row) and two
// of B, 4 LDS.128 for 64 FFMA. A warp is two rows of 16 threads, so each B load touches 16
// pieces 32 bytes apart: twice the wavefronts of 16 adjacent pieces (step 4 fixes that).
// One buffer: load, barrier, compute, barrier; the tiles in row order.
__global__ void __launch_bounds__(RegisterTiles::kThreads, RegisterTiles::kBlocksPerSm)
    sgemm_registers_kernel(const float* __restrict__ a, int lda, const float* __restrict__ b, int ldb,
                           float* __restrict__ c, int ldc, int m, int n, int k) {
  using T = RegisterTiles;
  constexpr int kBlockM = T::kBlockM, kBlockN = T::kBlockN, kBK = T::kBK, kMicro = T::kMicroM;
  constexpr int kAPitch = kTransposedPitch<T>;
  __shared__ __align__(16) float as[kBK][kAPitch];
  __shared__ __align__(16) float bs[kBK][kBlockN];
  const auto [row0, col0] = row_order_tile(n, kBlockM, kBlockN);
  const int tid = static_cast<int>(threadIdx.x), ty = tid / 16, tx = tid % 16;
  const TransposedTiles<T> tiles(a, lda, m, row0, tid);

  float acc[kMicro][kMicro] = {};
  for (int p0 = 0; p0 < k; p0 += kBK) {
    tiles.store(b, ldb, n, k, col0, p0, as, bs);
    __syncthreads();  // the tiles are whole before anyone reads them
#pragma unroll
    for (int q = 0; q < kBK; ++q) {
      float af[kMicro], bf[kMicro];
      unpack(*reinterpret_cast<const float4*>(&as[q][kMicro * ty]), af);
      unpack(*reinterpret_cast<const float4*>(&as[q][kMicro * ty + 4]), af + 4);
      unpack(*reinterpret_cast<const float4*>(&bs[q][kMicro * tx]), bf);
      unpack(*reinterpret_cast<const float4*>(&bs[q][kMicro * tx + 4]), bf + 4);
#pragma unroll
      for (int i = 0; i < kMicro; ++i)
#pragma unroll
        for (int j = 0; j < kMicro; ++j) acc[i][j] = fmaf(af[i], bf[j], acc[i][j]);
    }
    __syncthreads();  // the next tiles are stored only once every thread has read these
  }

#pragma unroll
  for (int i = 0; i < kMicro; ++i) {
    const int r = row0 + kMicro * ty + i;
    if (r >= m) continue;
    float* row = c + static_cast<std::size_t>(r) * ldc;
    store4(row, col0 + kMicro * tx, n, acc[i]);
    store4(row, col0 + kMicro * tx + 4, n, acc[i] + 4);
  }
}

void sgemm_registers(ConstView a, ConstView b, View c, cudaStream_t stream) {
  check_gemm_shapes("sgemm_registers", a, b, c);
  const int m = c.rows, n = c.cols, k = a.cols;
  if (m == 0 || n == 0) return;
  sgemm_registers_kernel<<<tile_blocks(m, n, RegisterTiles::kBlockM, RegisterTiles::kBlockN), RegisterTiles::kThreads,
                           0, stream>>>(a.data, a.ld, b.data, b.ld, c.data, c.ld, m, n, k);
  CUDA_CHECK_LAUNCH();
}

// ---- Step 4 -----------------------------------------------------------------------------
// Step 3 with the lanes placed per warp. The 8 warps stand 2 x 4 over the block's tile, each
// owning 64 x 32 of C; a lane's micro-tile is 2 x 2 blocks of 4 x 4: rows r, r + 32 (r = 4
// (lane / 4) within the warp's 64) and columns c, c + 16 (c = 4 (lane % 4) within its 32). At
// one k a warp's A load touches 8 adjacent pieces (128 bytes) and its B load 4 (64 bytes),
// each shared by 4 lanes: no conflict, fewer wavefronts per FFMA. Everything else is step 3's.
__global__ void __launch_bounds__(WarpTiles::kThreads, WarpTiles::kBlocksPerSm)
    sgemm_warp_tiled_kernel(const float* __restrict__ a, int lda, const float* __restrict__ b, int ldb,
                            float* __restrict__ c, int ldc, int m, int n, int k) {
  using T = WarpTiles;
  constexpr int kBlockM = T::kBlockM, kBlockN = T::kBlockN, kBK = T::kBK, kMicro = T::kMicroM, kWarpM = T::kWarpM,
                kWarpN = T::kWarpN, kWarpsN = T::kWarpsN;
  constexpr int kAPitch = kTransposedPitch<T>;
  __shared__ __align__(16) float as[kBK][kAPitch];
  __shared__ __align__(16) float bs[kBK][kBlockN];
  const auto [row0, col0] = row_order_tile(n, kBlockM, kBlockN);
  const int tid = static_cast<int>(threadIdx.x), warp = tid / 32, lane = tid % 32;
  const TransposedTiles<T> tiles(a, lda, m, row0, tid);  // as in step 3

  const int am = (warp / kWarpsN) * kWarpM + lane / 4 * 4;  // first of the thread's rows
  const int bn = (warp % kWarpsN) * kWarpN + lane % 4 * 4;  // first of its columns

  float acc[kMicro][kMicro] = {};
  const int tiles_k = ceil_div(k, kBK);
  for (int t = 0; t < tiles_k; ++t) {
    const int p0 = t * kBK;
    tiles.store(b, ldb, n, k, col0, p0, as, bs);
    __syncthreads();  // the tiles are whole before anyone reads them
#pragma unroll
    for (int q = 0; q < kBK; ++q) {
      float av[kMicro], bv[kMicro];
      unpack(*reinterpret_cast<const float4*>(&as[q][am]), av);
      unpack(*reinterpret_cast<const float4*>(&as[q][am + 32]), av + 4);
      unpack(*reinterpret_cast<const float4*>(&bs[q][bn]), bv);
      unpack(*reinterpret_cast<const float4*>(&bs[q][bn + 16]), bv + 4);
#pragma unroll
      for (int i = 0; i < kMicro; ++i)
#pragma unroll
        for (int j = 0; j < kMicro; ++j) acc[i][j] = fmaf(av[i], bv[j], acc[i][j]);
    }
    __syncthreads();  // no warp still reads these tiles when the next are stored
  }

#pragma unroll
  for (int i = 0; i < kMicro; ++i) {
    const int r = row0 + am + i / 4 * 32 + i % 4;
    if (r >= m) continue;
    float* row = c + static_cast<std::size_t>(r) * ldc;
    store4(row, col0 + bn, n, acc[i]);
    store4(row, col0 + bn + 16, n, acc[i] + 4);
  }
}

void sgemm_warp_tiled(ConstView a, ConstView b, View c, cudaStream_t stream) {
  check_gemm_shapes("sgemm_warp_tiled", a, b, c);
  const int m = c.rows, n = c.cols, k = a.cols;
  if (m == 0 || n == 0) return;
  sgemm_warp_tiled_kernel<<<tile_blocks(m, n, WarpTiles::kBlockM, WarpTiles::kBlockN), WarpTiles::kThreads, 0,
                            stream>>>(a.data, a.ld, b.data, b.ld, c.data, c.ld, m, n, k);
  CUDA_CHECK_LAUNCH();
}

// ---- Step 5 -----------------------------------------------------------------------------
__global__ void __launch_bounds__(PipeTiles::kThreads, PipeTiles::kBlocksPerSm)
    sgemm_pipelined_kernel(const float* __restrict__ a, int lda, const float* __restrict__ b, int ldb,
                           float* __restrict__ c, int ldc, int m, int n, int k) {
#if CML_ARCH_HAS_CP_ASYNC
  using namespace pipe;  // T = PipeTiles, and its layout in shared memory
  constexpr int kBK = T::kBK, kStages = T::kStages, kThreads = T::kThreads, kBlockN = T::kBlockN, kMicro = T::kMicroM;
  extern __shared__ __align__(128) float4 dyn_smem[];
  float* const smem = reinterpret_cast<float*>(dyn_smem);
  const TileOrigin tile = grouped_tile<T>(m, n);
  const int row0 = tile.row0, col0 = tile.col0;
  const int tid = static_cast<int>(threadIdx.x), warp = tid / 32, lane = tid % 32;
  const int tiles_k = ceil_div(k, kBK);

  // Tile t into stage s: thread `me` copies the A pieces me % 4 of rows me / 4 and
  // me / 4 + 64 (4 threads per 64-byte row piece) and the B pieces me % 32 of rows me / 32
  // and me / 32 + 8 (a warp copies 512 contiguous bytes). Every thread issues the same
  // copies, in or out of the matrix: zero-filled where it ends. The addresses are computed
  // again at each tile from an index the compiler must read again: kept in registers across
  // the compute (where the compiler would keep them) they overflow the 128 registers of a
  // thread, which the 64 accumulators and the fragments nearly fill, and spill.
  const auto issue = [&](int t, int s) {
    const unsigned me = thread_index_again();
    const unsigned a_r = me / kAPerRow, a_c = me % kAPerRow * 4, b_r = me / kBPerRow, b_c = me % kBPerRow * 4;
    float* const stage = smem + s * kStageFloats;
    const int p0 = t * kBK;
    // The tile's first elements, A(row0, p0) and B(p0, col0), exist (row0 < m, col0 < n,
    // p0 < k): a copy that reads nothing is pointed there.
    const float* const a_tile = a + static_cast<std::size_t>(row0) * lda + p0;
    const float* const b_tile = b + static_cast<std::size_t>(p0) * ldb + col0;
    const int a_bytes = piece_bytes(p0 + static_cast<int>(a_c), k);
    const int b_bytes = piece_bytes(col0 + static_cast<int>(b_c), n);
#pragma unroll
    for (unsigned i = 0; i < kAPieces; ++i) {
      const unsigned r = a_r + i * (kThreads / kAPerRow);
      const int bytes = row0 + static_cast<int>(r) < m ? a_bytes : 0;
      const float* src = a_tile + (bytes > 0 ? static_cast<std::size_t>(r) * static_cast<unsigned>(lda) + a_c : 0);
      cp_async16(stage + r * kAPitch + a_c, src, bytes);
    }
#pragma unroll
    for (unsigned i = 0; i < kBPieces; ++i) {
      const unsigned r = b_r + i * (kThreads / kBPerRow);
      const int bytes = p0 + static_cast<int>(r) < k ? b_bytes : 0;
      const float* src = b_tile + (bytes > 0 ? static_cast<std::size_t>(r) * static_cast<unsigned>(ldb) + b_c : 0);
      cp_async16(stage + kAFloats + r * kBlockN + b_c, src, bytes);
    }
  };

  // One group per tile slot in every thread, even an empty one past the last tile, so that
  // group g always means tile g: before the wait at tile t the thread has committed tiles
  // 0 .. t + kStages - 2, and "at most kStages - 2 pending" means tile t has landed.
#pragma unroll
  for (int s = 0; s < kStages - 1; ++s) {
    if (s < tiles_k) issue(s, s);
    cp_async_commit();
  }
  const int am = pipe_first_row<T>(warp, lane), bn = pipe_first_col<T>(warp, lane);
  float acc[kMicro][kMicro] = {};
  int use = 0, fill = kStages - 1;  // the stages of tile t and of tile t + kStages - 1
  for (int t = 0; t < tiles_k; ++t) {
    cp_async_wait<kStages - 2>();  // this thread's pieces of tile t have landed...
    // ...and after the barrier every thread's. The barrier also says every thread is done
    // with tile t - 1, whose stage is the one refilled next: one barrier per tile.
    __syncthreads();
    if (t + kStages - 1 < tiles_k) issue(t + kStages - 1, fill);
    cp_async_commit();
    const float* as = smem + use * kStageFloats;
    multiply_stage<T, kAPitch>(as, as + kAFloats, am, bn, 0, acc);
    use = use + 1 == kStages ? 0 : use + 1;
    fill = fill + 1 == kStages ? 0 : fill + 1;
  }
  store_pipe_tile<T>(c, ldc, m, n, row0 + am, col0 + bn, acc);
#else
  (void)a, (void)lda, (void)b, (void)ldb, (void)c, (void)ldc, (void)m, (void)n, (void)k;
  __trap();  // never launched: step 5 needs compute capability 8.0 (needs.txt)
#endif
}

void sgemm_pipelined(ConstView a, ConstView b, View c, cudaStream_t stream) {
  check_gemm_shapes("sgemm_pipelined", a, b, c);
  const int m = c.rows, n = c.cols, k = a.cols;
  if (m == 0 || n == 0) return;
  static const bool asked = allow_shared(sgemm_pipelined_kernel, pipe::kSmemBytes);
  (void)asked;
  sgemm_pipelined_kernel<<<tile_blocks(m, n, PipeTiles::kBlockM, PipeTiles::kBlockN), PipeTiles::kThreads,
                           pipe::kSmemBytes, stream>>>(a.data, a.ld, b.data, b.ld, c.data, c.ld, m, n, k);
  CUDA_CHECK_LAUNCH();
}

// ---- Step 6 -----------------------------------------------------------------------------
// Each stage has two barriers. "full": one arrival (thread 0's expect_tx of the stage's
// bytes) plus the two boxes' bytes; every thread waits on it before computing. "empty": each
// warp arrives once after computing (its lane 0, after the warp's lanes met at __syncwarp);
// thread 0 waits on it before refilling the stage, so no box overwrites data still being
// read. One arrival per warp, not per thread: 8 arrivals a stage where there were 256, the
// largest single gain of this step (docs/09_sgemm.md). Tile t uses stage t % Stages for the
// (t / Stages)-th time: both barriers' phase parity is (t / Stages) & 1.
//
// Thread 0 refills the stage of tile t - 1 at the start of iteration t, not that of tile t
// at its end: by then the other warps have usually finished tile t - 1, so its wait on the
// empty barrier rarely stalls, and Stages - 1 tiles stay in flight behind the one computed.
// The maps are __grid_constant__ parameters: the TMA unit reads them where they lie.
template <class T, int Stages>
__global__ void __launch_bounds__(T::kThreads, T::kBlocksPerSm)
    sgemm_tma_kernel(const __grid_constant__ CUtensorMap map_a, const __grid_constant__ CUtensorMap map_b,
                     float* __restrict__ c, int ldc, int m, int n, int k) {
#if CML_ARCH_HAS_TMA
  using L = tma::Layout<T>;  // its boxes and barriers
  constexpr int kBK = T::kBK, kAFloats = L::kAFloats, kStageFloats = L::kStageFloats, kAlign = tma::kAlign;
  constexpr unsigned kStageBytes = L::kStageBytes;
  // The empty barrier of a stage: one arrival per warp, by its lane 0 once the warp's lanes
  // are done with the stage.
  constexpr unsigned kConsumers = T::kThreads / 32;
  extern __shared__ __align__(128) float4 dyn_smem[];
  __shared__ std::uint64_t full[Stages], empty[Stages];
  const std::uint32_t raw = shared_address(dyn_smem);
  float* const stages =
      reinterpret_cast<float*>(reinterpret_cast<unsigned char*>(dyn_smem) + (kAlign - raw % kAlign) % kAlign);
  const TileOrigin tile = grouped_tile<T>(m, n);
  const int row0 = tile.row0, col0 = tile.col0;
  const int tid = static_cast<int>(threadIdx.x), warp = tid / 32, lane = tid % 32;
  const int tiles_k = ceil_div(k, kBK);

  if (tid == 0) {
    for (int s = 0; s < Stages; ++s) {
      mbarrier_init(&full[s], 1);
      mbarrier_init(&empty[s], kConsumers);
    }
    fence_proxy_async_shared();
  }
  __syncthreads();  // the inits, before any thread waits on a barrier

  // Thread 0 only. Coordinates go innermost first: (k, row) in A, (column, k) in B.
  const auto issue = [&](int t, int s) {
    float* as = stages + s * kStageFloats;
    mbarrier_arrive_expect_tx(&full[s], kStageBytes);
    tensor_load_2d(as, &map_a, t * kBK, row0, &full[s]);
    tensor_load_2d(as + kAFloats, &map_b, col0, t * kBK, &full[s]);
  };
  if (tid == 0)
    for (int s = 0; s < Stages && s < tiles_k; ++s) issue(s, s);

  // The TMA unit applied the 128-byte swizzle to A's rows: piece j of row r lies at
  // piece j ^ (r % 8). This thread's rows are am + 8 i, all with r % 8 == am % 8.
  const int am = pipe_first_row<T>(warp, lane), bn = pipe_first_col<T>(warp, lane);
  const int swizzle = am % 8;
  float acc[T::kMicroM][T::kMicroN] = {};
  int stage = 0;
  unsigned parity = 0;
  for (int t = 0; t < tiles_k; ++t) {
    if (tid == 0 && t > 0 && t - 1 + Stages < tiles_k) {
      const int prev = stage == 0 ? Stages - 1 : stage - 1;
      const unsigned prev_parity = stage == 0 ? parity ^ 1u : parity;
      wait_phase(&empty[prev], prev_parity, false, prev);
      issue(t - 1 + Stages, prev);
    }
    wait_phase(&full[stage], parity, true, stage);
    const float* as = stages + stage * kStageFloats;
    multiply_stage<T, kBK>(as, as + kAFloats, am, bn, swizzle, acc);
    __syncwarp();                                   // every lane of this warp has read the stage...
    if (lane == 0) mbarrier_arrive(&empty[stage]);  // ...and one arrival says so
    if (++stage == Stages) {
      stage = 0;
      parity ^= 1u;
    }
  }
  store_pipe_tile<T>(c, ldc, m, n, row0 + am, col0 + bn, acc);
#else
  (void)map_a;
  (void)map_b;
  (void)c;
  (void)ldc;
  (void)m;
  (void)n;
  (void)k;
  __trap();  // never launched: sgemm_tma refuses a GPU below 9.0
#endif
}

namespace {

// Past 48 KiB a block's dynamic shared memory must be asked for, once per instantiation.
template <class T, int Stages>
void launch_tma(const CUtensorMap& map_a, const CUtensorMap& map_b, View c, int k, cudaStream_t stream) {
  constexpr int kBytes = tma::Layout<T>::smem_bytes(Stages);
  static const bool asked = allow_shared(sgemm_tma_kernel<T, Stages>, kBytes);
  (void)asked;
  sgemm_tma_kernel<T, Stages><<<tile_blocks(c.rows, c.cols, T::kBlockM, T::kBlockN), T::kThreads, kBytes, stream>>>(
      map_a, map_b, c.data, c.ld, c.rows, c.cols, k);
}

// Whether a block of this GPU may have the shared memory of `stages` stages: one attribute,
// read at each call (not the device's whole properties, which the host cannot afford per
// launch: chapters/09_sgemm/provided.cu, require_tma).
template <class T>
bool tma_stages_fit(int stages) {
  int device = 0, bytes = 0;
  CUDA_CHECK(cudaGetDevice(&device));
  CUDA_CHECK(cudaDeviceGetAttribute(&bytes, cudaDevAttrMaxSharedMemoryPerBlockOptin, device));
  return tma::Layout<T>::smem_bytes(stages) + 2 * stages * static_cast<int>(sizeof(std::uint64_t)) <=
         bytes;  // + the barriers
}

// The maps of A and B in T's boxes, then T's kernel with as many stages as fit.
template <class T>
void run_tma(ConstView a, ConstView b, View c, cudaStream_t stream) {
  const int m = c.rows, n = c.cols, k = a.cols;
  // With k = 0 there is no tile to load, and no map to encode (a dimension of 0 is no
  // tensor): the kernel never reads the empty maps and stores zeros.
  CUtensorMap map_a{}, map_b{};
  if (k > 0) {
    map_a = tensor_map(a.data, m, k, a.ld, T::kBlockM, T::kBK, CU_TENSOR_MAP_SWIZZLE_128B);
    map_b = tensor_map(b.data, k, n, b.ld, T::kBK, T::kBlockN, CU_TENSOR_MAP_SWIZZLE_NONE);
  }
  // 4 stages (193 KiB, 161 KiB) do not fit sm_120's 99 KiB a block
  if constexpr (std::is_same_v<T, TmaTiles> || std::is_same_v<T, TmaMidTiles>) {
    if (!tma_stages_fit<T>(T::kStages)) {
      launch_tma<T, tma::kFewStages>(map_a, map_b, c, k, stream);
      return;
    }
  }
  launch_tma<T, T::kStages>(map_a, map_b, c, k, stream);  // TmaSmallTiles' 3 stages (97 KiB) fit every sm_90+
}

// The work of the busiest SM with tile T: blocks are dealt evenly over the SMs, so the
// busiest runs ceil(tiles / SMs) of them, each a tile's area of C, at `rate`, what one SM
// computes per unit of time with this tile, relative to the wide tile's. A tile that leaves
// the last wave nearly empty loses here, however fast its blocks.
template <class T>
double busiest_sm_work(int m, int n, int sms, double rate) {
  const long long tiles = static_cast<long long>(ceil_div(m, T::kBlockM)) * ceil_div(n, T::kBlockN);
  const long long busiest = (tiles + sms - 1) / sms;
  return static_cast<double>(busiest) * T::kBlockM * T::kBlockN / rate;
}

}  // namespace

void sgemm_tma(ConstView a, ConstView b, View c, cudaStream_t stream) {
  check_gemm_shapes("sgemm_tma", a, b, c);
  require_tma("sgemm_tma");
  const int m = c.rows, n = c.cols;
  if (m == 0 || n == 0) return;
  // The tile whose busiest SM has the least to do: one that leaves the last wave nearly
  // empty loses, however fast its blocks (docs/09_sgemm.md, "Waves": which shape takes which
  // tile). The rates per SM against the wide tile's: the small tile's measured at 4096^3, the
  // middle one's an estimate that the shapes measured do not depend on.
  const int sms = cml::usable_sm_count();
  const double wide = busiest_sm_work<TmaTiles>(m, n, sms, 1.0);
  const double mid = busiest_sm_work<TmaMidTiles>(m, n, sms, 0.97);
  const double small = busiest_sm_work<TmaSmallTiles>(m, n, sms, 0.93);
  if (wide <= mid && wide <= small)
    run_tma<TmaTiles>(a, b, c, stream);
  else if (mid <= small)
    run_tma<TmaMidTiles>(a, b, c, stream);
  else
    run_tma<TmaSmallTiles>(a, b, c, stream);
  CUDA_CHECK_LAUNCH();
}

}  // namespace ch09
