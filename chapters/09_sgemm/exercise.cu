// Chapter 09 — a tiled SGEMM: shared-memory tiles, a conflict-free transposed operand,
// register blocking, a cp.async pipeline and the tensor memory accelerator. THE file you
// edit: six steps, TODO(1) to TODO(6). Every function works as shipped (one thread per
// element of C, reading A and B from global memory: correct and slow). Keep the kernels'
// names: the tests find them by name in the compiled code and in Nsight Compute's counters.
//
//   ./lab run 09            your kernels against cuBLAS, on a few shapes
//   ./lab check 09          the chapter's tests: which steps pass, and why not
//   ./lab hint 09           one more hint (chapters/09_sgemm/hints.md)
//
// What each function must do is in sgemm.cuh: the views, the shapes (any m, n, k, none a
// multiple of anything), ld % 4 == 0, the pad columns that are never written, k = 0.
#include "sgemm.cuh"

#include "cml/errors.hpp"
#include "cml/ptx.cuh"  // chapter 08's PTX wrappers (cp.async groups, mbarriers, TMA loads), for steps 5-6

#include <string>

namespace ch09 {

namespace {

constexpr int kNaiveX = 32, kNaiveY = 8;  // the shipped block: 32 columns x 8 rows of C

// The shipped grid: a block per 32 columns x 8 rows of C; past 65535 blocks down the rows,
// each block takes more rows (a grid's y stops there).
dim3 naive_grid(int m, int n) {
  const int down = (m + kNaiveY - 1) / kNaiveY;
  return dim3(static_cast<unsigned>((n + kNaiveX - 1) / kNaiveX), static_cast<unsigned>(down < 65535 ? down : 65535));
}

// The shipped body of every GEMM step: thread (x, y) computes C(row, col) for its column
// and its rows, reading a row of A and a column of B straight from global memory. A warp
// reads one float of A (all lanes the same) and 32 consecutive floats of B per k, and no
// float it reads is reused from anywhere closer than the caches.
__device__ __forceinline__ void gemm_naive_body(const float* __restrict__ a, int lda, const float* __restrict__ b,
                                                int ldb, float* __restrict__ c, int ldc, int m, int n, int k) {
  const int col = static_cast<int>(blockIdx.x * kNaiveX + threadIdx.x);
  if (col >= n) return;
  for (int row = static_cast<int>(blockIdx.y * kNaiveY + threadIdx.y); row < m;
       row += static_cast<int>(gridDim.y) * kNaiveY) {
    float acc = 0.0f;
    for (int p = 0; p < k; ++p)
      acc = fmaf(a[static_cast<std::size_t>(row) * lda + p], b[static_cast<std::size_t>(p) * ldb + col], acc);
    c[static_cast<std::size_t>(row) * ldc + col] = acc;
  }
}

// The same for C = A Aᵀ: C(row, col) reads rows `row` and `col` of A.
__device__ __forceinline__ void gram_naive_body(const float* __restrict__ a, int lda, float* __restrict__ c, int ldc,
                                                int m, int k) {
  const int col = static_cast<int>(blockIdx.x * kNaiveX + threadIdx.x);
  if (col >= m) return;
  for (int row = static_cast<int>(blockIdx.y * kNaiveY + threadIdx.y); row < m;
       row += static_cast<int>(gridDim.y) * kNaiveY) {
    float acc = 0.0f;
    for (int p = 0; p < k; ++p)
      acc = fmaf(a[static_cast<std::size_t>(row) * lda + p], a[static_cast<std::size_t>(col) * lda + p], acc);
    c[static_cast<std::size_t>(row) * ldc + col] = acc;
  }
}

}  // namespace

// Every launcher checks the shapes first (check_gemm_shapes, check_gram_shapes: nothing may
// be enqueued before a mismatch throws), enqueues nothing when C is empty, and launches on
// `stream` only. Keep those three lines when you change a launch.

// TODO(1): compute C = A B by tiles: each block owns a tile of C and walks along k, staging
// a tile of A and a tile of B in shared memory, so that each float read from global memory
// serves many multiply-adds. Constraints: every global load is coalesced (a warp's lanes
// read consecutive floats of one row); any m, n and k — the tiles at the edges are partial:
// read only inside the matrices, and what lies outside must add nothing to a sum; no thread
// reads a staged tile before the whole block has written it, nor overwrites one another
// thread may still be reading; only C's m x n elements are written (never a pad column).
// The tile, the block and the launch are yours (change the launch below with the kernel).
__global__ void sgemm_tiled_kernel(const float* __restrict__ a, int lda, const float* __restrict__ b, int ldb,
                                   float* __restrict__ c, int ldc, int m, int n, int k) {
  gemm_naive_body(a, lda, b, ldb, c, ldc, m, n, k);
}

void sgemm_tiled(ConstView a, ConstView b, View c, cudaStream_t stream) {
  check_gemm_shapes("sgemm_tiled", a, b, c);
  const int m = c.rows, n = c.cols, k = a.cols;
  if (m == 0 || n == 0) return;
  sgemm_tiled_kernel<<<naive_grid(m, n), dim3(kNaiveX, kNaiveY), 0, stream>>>(a.data, a.ld, b.data, b.ld, c.data, c.ld,
                                                                              m, n, k);
  CUDA_CHECK_LAUNCH();
}

// TODO(2): C = A Aᵀ (C is m x m) with step 1's scheme. Both staged tiles are row blocks of
// A, read from global memory along k (coalesced). The one that plays Aᵀ is read in shared
// memory across its rows: at one k, each lane of a warp reads a different row. Constraint:
// those reads are free of bank conflicts (Nsight Compute counts them) — in a plain 32 x 32
// float tile the 32 rows' words all sit in one bank. Change where the tile's elements
// live, not which thread computes what. Step 1's constraints hold too.
__global__ void gram_tiled_kernel(const float* __restrict__ a, int lda, float* __restrict__ c, int ldc, int m, int k) {
  gram_naive_body(a, lda, c, ldc, m, k);
}

void gram_tiled(ConstView a, View c, cudaStream_t stream) {
  check_gram_shapes("gram_tiled", a, c);
  const int m = c.rows, k = a.cols;
  if (m == 0) return;
  gram_tiled_kernel<<<naive_grid(m, m), dim3(kNaiveX, kNaiveY), 0, stream>>>(a.data, a.ld, c.data, c.ld, m, k);
  CUDA_CHECK_LAUNCH();
}

// TODO(3): register blocking: each thread computes a micro-tile of C (several rows by
// several columns) held in registers, so that each float it loads from shared memory
// serves several multiply-adds. Constraints: the thread's fragments of A and of B come from
// shared memory 16 bytes at a time (LDS.128 in the SASS): the 4 floats of one load must be
// neighbours in shared memory, for A too, whose tile is read along k in global memory;
// nothing lives in local memory (no LDL/STL in the SASS: an array indexed by a value the
// compiler cannot know at compile time goes there); global loads stay coalesced, and
// 16 bytes wide wherever a whole 16-byte piece lies inside the matrix (ld % 4 == 0 puts
// every row on 16 bytes); the edges as in step 1. The block and thread tiles are yours;
// aim for a fraction of cuBLAS, not of the naive kernel.
__global__ void sgemm_registers_kernel(const float* __restrict__ a, int lda, const float* __restrict__ b, int ldb,
                                       float* __restrict__ c, int ldc, int m, int n, int k) {
  gemm_naive_body(a, lda, b, ldb, c, ldc, m, n, k);
}

void sgemm_registers(ConstView a, ConstView b, View c, cudaStream_t stream) {
  check_gemm_shapes("sgemm_registers", a, b, c);
  const int m = c.rows, n = c.cols, k = a.cols;
  if (m == 0 || n == 0) return;
  sgemm_registers_kernel<<<naive_grid(m, n), dim3(kNaiveX, kNaiveY), 0, stream>>>(a.data, a.ld, b.data, b.ld, c.data,
                                                                                  c.ld, m, n, k);
  CUDA_CHECK_LAUNCH();
}

// TODO(4): step 3 with each warp's threads placed over a compact piece of the block's C:
// the shared-memory traffic of a k is decided per warp, not per thread — a warp's fragment
// loads cost one wavefront for every 128 distinct bytes they touch (and more where two
// touch one bank), so the fewer distinct words of A and B a warp needs at one k, the fewer
// wavefronts feed its FFMAs. Constraints: those loads free of bank conflicts; step 3's hold
// (16-byte fragment loads, nothing in local memory, coalesced global loads, the edges).
// Which piece of C each warp owns and how its 32 lanes divide it are yours; Nsight Compute
// counts the shared-load wavefronts per FFMA.
__global__ void sgemm_warp_tiled_kernel(const float* __restrict__ a, int lda, const float* __restrict__ b, int ldb,
                                        float* __restrict__ c, int ldc, int m, int n, int k) {
  gemm_naive_body(a, lda, b, ldb, c, ldc, m, n, k);
}

void sgemm_warp_tiled(ConstView a, ConstView b, View c, cudaStream_t stream) {
  check_gemm_shapes("sgemm_warp_tiled", a, b, c);
  const int m = c.rows, n = c.cols, k = a.cols;
  if (m == 0 || n == 0) return;
  sgemm_warp_tiled_kernel<<<naive_grid(m, n), dim3(kNaiveX, kNaiveY), 0, stream>>>(a.data, a.ld, b.data, b.ld, c.data,
                                                                                   c.ld, m, n, k);
  CUDA_CHECK_LAUNCH();
}

// TODO(5): step 4's computation fed by a pipeline of shared-memory stages: while the block
// computes on one stage, the tiles of the next ones are in flight. The copies go straight
// from global to shared memory, 16 bytes each, through L2 only; ragged edges must arrive as
// zeros, filled by the copy itself, without reading past the matrix. Constraints: a thread
// computes on a stage only once every thread's copies into it have landed; a stage is
// refilled only after every thread has finished reading it; the copies cannot transpose, so
// A's tile arrives as rows of A — arrange the reads so the fragment loads stay 16 bytes
// wide and free of bank conflicts; if your stages need more than 48 KiB of dynamic shared
// memory, the kernel must be allowed it before its launch; the file still builds for a GPU
// without cp.async (the build targets yours: a T4 runs steps 1-4).
__global__ void sgemm_pipelined_kernel(const float* __restrict__ a, int lda, const float* __restrict__ b, int ldb,
                                       float* __restrict__ c, int ldc, int m, int n, int k) {
  gemm_naive_body(a, lda, b, ldb, c, ldc, m, n, k);
}

void sgemm_pipelined(ConstView a, ConstView b, View c, cudaStream_t stream) {
  check_gemm_shapes("sgemm_pipelined", a, b, c);
  const int m = c.rows, n = c.cols, k = a.cols;
  if (m == 0 || n == 0) return;
  sgemm_pipelined_kernel<<<naive_grid(m, n), dim3(kNaiveX, kNaiveY), 0, stream>>>(a.data, a.ld, b.data, b.ld, c.data,
                                                                                  c.ld, m, n, k);
  CUDA_CHECK_LAUNCH();
}

// TODO(6): (compute capability 9.0) step 5 with the tiles of A and B brought by the tensor
// memory accelerator: one thread starts each tile's copies from tensor maps that you encode
// on the host (the driver's encoder is provided: tensor_map_encoder, sgemm.cuh), passed to
// the kernel as parameters that the TMA unit reads where they lie. Each stage completes
// on a barrier that counts the bytes delivered ("full") and is released by the threads that
// read it ("empty") before it is refilled. Constraints: the maps' rules (row strides a
// multiple of 16 bytes, box sides of at most 256 elements, box rows a multiple of 16
// bytes); the TMA unit writes zeros for the part of a box outside the matrix, and counts
// the whole box's bytes; no wait may hang for ever in silence — give up after a while and
// say which barrier of which stage; the fragment loads free of bank conflicts (what the
// TMA unit writes can be laid out for that); nothing in local memory, as in step 3 (no
// LDL/STL in the SASS, the give-up path included); the file still builds for a GPU without
// TMA, and the stages fit the shared memory a block of this GPU may have. Keep the
// compute-capability check below.
__global__ void sgemm_tma_kernel(const float* __restrict__ a, int lda, const float* __restrict__ b, int ldb,
                                 float* __restrict__ c, int ldc, int m, int n, int k) {
  gemm_naive_body(a, lda, b, ldb, c, ldc, m, n, k);
}

void sgemm_tma(ConstView a, ConstView b, View c, cudaStream_t stream) {
  check_gemm_shapes("sgemm_tma", a, b, c);
  require_tma("sgemm_tma");
  const int m = c.rows, n = c.cols, k = a.cols;
  if (m == 0 || n == 0) return;
  sgemm_tma_kernel<<<naive_grid(m, n), dim3(kNaiveX, kNaiveY), 0, stream>>>(a.data, a.ld, b.data, b.ld, c.data, c.ld, m,
                                                                            n, k);
  CUDA_CHECK_LAUNCH();
}

}  // namespace ch09
