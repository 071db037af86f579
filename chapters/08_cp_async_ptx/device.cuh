// Chapter 08 — the device code exercise.cu and provided.cu share that is not the lesson.
// Device code: nvcc only.
//
// First, small wrappers over the PTX instructions the chapter uses, one per instruction,
// each saying what it does and what it compiles to (nvcc 13.0, sm_90). The one wrapper
// that is not here is cp.async itself: you write it (exercise.cu, step 1). Shared-memory
// operands of these instructions are addresses in the .shared state space (32 bits), not
// generic pointers: each wrapper converts with __cvta_generic_to_shared, so you pass the
// ordinary pointer to the __shared__ object. The sm_90 instructions (mbarrier transaction
// counts, bulk copies, tensor copies) exist from PTX for sm_90 on; for older targets these
// wrappers compile to a trap: the program and the tests check the GPU before launching a
// kernel that uses them.
//
// Then the tile helpers: the tiled sum's (tile_span, compute_tile, finish_block, and the
// register-staged body every starter kernel runs, from cml/tile_sum.cuh), their 2D
// counterparts for step 5's boxes, and the dispatch of a run-time stage count to a kernel
// template.
#pragma once

#include "cp_async_ptx.cuh"

#include <cuda.h>  // CUtensorMap

#include <cstdint>
#include <cstdio>
#include <stdexcept>
#include <string>
#include <type_traits>

#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
#define CH08_SM90 1
#else
#define CH08_SM90 0
#endif

namespace ch08 {

// ==== PTX wrappers ============================================================================
// The .shared address of a pointer to shared memory.
__device__ __forceinline__ std::uint32_t shared_address(const void* p) {
  return static_cast<std::uint32_t>(__cvta_generic_to_shared(p));
}

// ---- cp.async groups (sm_80) -----------------------------------------------------------------

// cp.async.commit_group: closes this thread's group of cp.async issued since the last
// commit (an empty group if none). SASS: LDGDEPBAR.
__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::: "memory"); }

// cp.async.wait_group N: waits until at most N of this thread's committed groups are still
// pending — the newest N; every older group has landed. N is an immediate in the
// instruction, so it is a template parameter. It covers THIS thread's copies only: another
// thread's words are visible after a barrier that follows that thread's wait.
// SASS: DEPBAR.LE SB0, N.
template <int N>
__device__ __forceinline__ void cp_async_wait() {
  static_assert(N >= 0 && N <= 7, "cp.async.wait_group takes 0 to 7 here (the SASS scoreboard counts to 7)");
  asm volatile("cp.async.wait_group %0;\n" ::"n"(N) : "memory");
}

// cp.async.wait_all: commits and waits for everything (= commit_group; wait_group 0).
__device__ __forceinline__ void cp_async_wait_all() { asm volatile("cp.async.wait_all;\n" ::: "memory"); }

// ---- mbarrier (sm_90 for the transaction counts) ------------------------------------------

// mbarrier.init: a barrier object in shared memory (8 bytes, 8-byte aligned) whose phase
// completes when `arrivals` arrivals have been made AND its transaction count is back to
// zero. One thread initialises it; then a fence that makes the init visible to the copy
// engine (below) and a __syncthreads() for the other threads, before anyone uses it.
// SASS: SYNCS.EXCH.64.
__device__ __forceinline__ void mbarrier_init(std::uint64_t* bar, unsigned arrivals) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\n" ::"r"(shared_address(bar)), "r"(arrivals) : "memory");
}

// The copy engine — bulk copies, TMA — is the "asynchronous proxy": it does not see this
// thread's ordinary accesses to shared memory in program order, and a __syncthreads does not
// order them for it. Two fences do, after an mbarrier.init:
//
// fence.proxy.async.shared::cta orders all of this thread's ordinary (generic proxy)
// accesses to shared memory before later asynchronous-proxy accesses: after an init, and
// wherever ordinary stores meet the copy engine (threads write a tile a TMA store then
// reads). The CUDA Programming Guide's TMA example uses it after the init.
// SASS: FENCE.VIEW.ASYNC.S, MEMBAR.ALL.CTA, FENCE.VIEW.ASYNC.S.
__device__ __forceinline__ void fence_proxy_async_shared() {
#if CH08_SM90
  asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
#else
  __trap();
#endif
}

// fence.mbarrier_init.release.cluster: the lighter fence for exactly this case (the inits
// of this thread, released to the cluster). nvcc 13.0 for sm_90 emits no instruction of its
// own for it (a NOP) in a launch without clusters; PTX still asks for one of the two.
__device__ __forceinline__ void fence_mbarrier_init() {
#if CH08_SM90
  asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
#else
  __trap();
#endif
}

// mbarrier.arrive.expect_tx: this thread arrives on the barrier and adds `bytes` to the
// transaction count of its current phase: the phase cannot complete before copies that
// complete_tx on this barrier have delivered that many bytes. Say exactly the bytes the
// copies of this phase will deliver: fewer, and the phase completes early (or a later
// phase is corrupted); more, and it never completes. SASS: SYNCS.ARRIVE.TRANS64.
__device__ __forceinline__ void mbarrier_arrive_expect_tx(std::uint64_t* bar, unsigned bytes) {
#if CH08_SM90
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\n" ::"r"(shared_address(bar)), "r"(bytes)
               : "memory");
#else
  (void)bar;
  (void)bytes;
  __trap();
#endif
}

// mbarrier.try_wait.parity: whether the phase of parity `parity` (0 even, 1 odd) has
// completed. The parity names the current phase or the one just before it: asking for the
// current phase's parity waits for it; asking for the other parity means "the phase before",
// which has completed, and returns true at once. So the k-th use of a barrier waits for
// parity k & 1. The hardware may suspend the thread a while before answering false.
// SASS: SYNCS.PHASECHK.TRANS64.TRYWAIT.
__device__ __forceinline__ bool mbarrier_try_wait_parity(std::uint64_t* bar, unsigned parity) {
#if CH08_SM90
  std::uint32_t done = 0;
  asm volatile(
      "{\n"
      "  .reg .pred p;\n"
      "  mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\n"
      "  selp.u32 %0, 1, 0, p;\n"
      "}\n"
      : "=r"(done)
      : "r"(shared_address(bar)), "r"(parity)
      : "memory");
  return done != 0;
#else
  (void)bar;
  (void)parity;
  __trap();
  return false;
#endif
}

// %globaltimer: nanoseconds, the same clock in every SM.
__device__ __forceinline__ unsigned long long global_ns() {
  unsigned long long t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

inline constexpr unsigned long long kDefaultWaitLimitNs = 4'000'000'000ull;

// Waits for the phase of parity `parity` of the barrier of `stage`, like a loop on
// mbarrier_try_wait_parity, but never for ever: a phase that has not completed after the
// report's limit (4 s: a tile lands in microseconds) is given up on. The first thread to
// give up records where in `report` (block, thread, stage, parity, time) and every later
// wait of the kernel returns at once, so the kernel ends (with wrong sums) and the host can
// say what went wrong instead of hanging. With report == nullptr it prints and traps.
// Every thread that reads the stage calls it; the phase is the barrier's, so the wait
// covers the copies of the whole phase, whoever issued them.
__device__ __noinline__ inline void wait_phase_slowly(std::uint64_t* bar, unsigned parity, Report* report, int stage) {
  const unsigned long long start = global_ns();
  for (unsigned tries = 1;; ++tries) {
    if (mbarrier_try_wait_parity(bar, parity)) return;
    if (tries % 64 != 0) continue;
    if (report != nullptr && *static_cast<volatile unsigned*>(&report->stalled) != 0) return;  // gave up already
    const unsigned long long limit = report != nullptr && report->limit_ns != 0 ? report->limit_ns : kDefaultWaitLimitNs;
    const unsigned long long waited = global_ns() - start;
    if (waited < limit) continue;
    if (report == nullptr) {
      printf("wait_phase: block %u thread %u gave up on stage %d, parity %u after %llu ns\n", blockIdx.x, threadIdx.x,
             stage, parity, waited);
      __trap();
    }
    if (atomicCAS(&report->stalled, 0u, 1u) == 0u) {
      report->block = blockIdx.x;
      report->thread = threadIdx.x;
      report->stage = static_cast<unsigned>(stage);
      report->parity = parity;
      report->waited_ns = waited;
      __threadfence();
    }
    return;
  }
}

__device__ __forceinline__ void wait_phase(std::uint64_t* bar, unsigned parity, Report* report, int stage) {
  if (!mbarrier_try_wait_parity(bar, parity)) wait_phase_slowly(bar, parity, report, stage);
}

// ---- Bulk copies (sm_90) -------------------------------------------------------------------

// cp.async.bulk global -> shared, completing on `bar`: one instruction, issued by one
// thread, moves `bytes` (a multiple of 16, > 0) from `src` (16-byte aligned, global) to `dst`
// (16-byte aligned, shared) through the copy engine, and then completes `bytes`
// transactions on the barrier (complete_tx). SASS: UBLKCP.S.G. The destination is named
// .shared::cta (PTX ISA 8.6, CUDA 12.8), this block's own shared memory: with
// .shared::cluster, which may name another block's, nvcc 13.0 compiles for sm_120 a check of
// the block and a fallback call through local memory (and the same SASS for sm_90).
__device__ __forceinline__ void bulk_copy_to_shared(void* dst, const void* src, unsigned bytes, std::uint64_t* bar) {
#if CH08_SM90
  asm volatile("cp.async.bulk.shared::cta.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];\n" ::"r"(
                   shared_address(dst)),
               "l"(src), "r"(bytes), "r"(shared_address(bar))
               : "memory");
#else
  (void)dst;
  (void)src;
  (void)bytes;
  (void)bar;
  __trap();
#endif
}

// cp.async.bulk.tensor.2d global -> shared through a tensor map, completing on `bar`: one
// instruction moves the box whose first element is at column x, row y of the map's matrix
// (coordinates in elements, innermost dimension first) into `dst` (128-byte aligned,
// shared), rows one after another. Elements of the box outside the matrix are not read:
// they land as zeros. The transactions it completes are always the whole box's bytes,
// inside the matrix or not. `map` is the address of a __grid_constant__ kernel parameter
// (or of a tensor map in global or constant memory). SASS: UTMALDG.2D. Into .shared::cta,
// as the bulk copy above.
__device__ __forceinline__ void tensor_load_2d(void* dst, const CUtensorMap* map, int x, int y, std::uint64_t* bar) {
#if CH08_SM90
  asm volatile(
      "cp.async.bulk.tensor.2d.shared::cta.global.tile.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3}], [%4];\n" ::
          "r"(shared_address(dst)),
      "l"(reinterpret_cast<std::uint64_t>(map)), "r"(x), "r"(y), "r"(shared_address(bar))
      : "memory");
#else
  (void)dst;
  (void)map;
  (void)x;
  (void)y;
  (void)bar;
  __trap();
#endif
}

// ==== Tile helpers ============================================================================

// The tiled sum's device helpers (cml/tile_sum.cuh), chapter 07's too.
using cml::tile_sum::compute_piece_of;
using cml::tile_sum::compute_tile;
using cml::tile_sum::finish_block;
using cml::tile_sum::sum_through_registers;
using cml::tile_sum::tile_span;
using cml::tile_sum::TileSpan;

// Dynamic shared memory of a pipeline of `stages` tiles.
inline std::size_t stage_bytes(int stages) { return static_cast<std::size_t>(stages) * kTileBytes; }

// Calls launch(std::integral_constant<int, S>{}) for S == stages, so a launcher turns the
// job's run-time stage count into the kernel template's compile-time one:
//   for_stages(job.stages, "sum_x", [&](auto s) { sum_x_kernel<decltype(s)::value><<<...>>>(job); });
// std::invalid_argument (naming `what`) for stages outside 1..kMaxStages.
template <class Launch>
void for_stages(int stages, const char* what, Launch&& launch) {
  static_assert(kMaxStages == 4, "for_stages lists the stage counts 1..4");
  switch (stages) {
    case 1: launch(std::integral_constant<int, 1>{}); break;
    case 2: launch(std::integral_constant<int, 2>{}); break;
    case 3: launch(std::integral_constant<int, 3>{}); break;
    case 4: launch(std::integral_constant<int, 4>{}); break;
    default: throw std::invalid_argument(std::string(what) + ": stages must be 1 to " + std::to_string(kMaxStages));
  }
}

// ---- Step 5's boxes ----------------------------------------------------------------------

// Box t of the matrix, for boxes of box_rows rows: its first column and row, and how many
// of its rows and columns lie inside the matrix (box_rows and kBoxCols except at the
// bottom and right edges).
struct BoxSpan {
  int x, y;
  int rows, cols;
};
__host__ __device__ inline BoxSpan box_span(const Matrix& m, int box_rows, std::size_t t) {
  const std::size_t across = box_columns(m), high = static_cast<std::size_t>(box_rows);
  const std::size_t x = (t % across) * kBoxCols, y = (t / across) * high;
  const std::size_t cols = m.cols - x < static_cast<std::size_t>(kBoxCols) ? m.cols - x : kBoxCols;
  const std::size_t rows = m.rows - y < high ? m.rows - y : high;
  return {static_cast<int>(x), static_cast<int>(y), static_cast<int>(rows), static_cast<int>(cols)};
}

// Adds work(w, compute) over the words of box `b` that lie inside the matrix, the box in
// shared memory row after row (rows of kBoxCols words). Thread t takes the 16-byte pieces
// p, p + 256, ... with p = compute_piece_of(t) (half a block away, as compute_tile): piece
// q is row q / 64, columns 4 (q % 64) .. + 3. The whole box must have landed for every
// thread before any thread calls it.
__device__ __forceinline__ Word compute_box(const Word* box, const BoxSpan& b, int compute, Word acc) {
  constexpr int kPiecesPerRow = kBoxCols / 4;
  for (int q = compute_piece_of(static_cast<int>(threadIdx.x)); q < b.rows * kPiecesPerRow; q += kThreads) {
    const int row = q / kPiecesPerRow, col = 4 * (q % kPiecesPerRow);
    if (col >= b.cols) continue;
    const uint4 v = *reinterpret_cast<const uint4*>(box + row * kBoxCols + col);  // LDS.128
    if (compute == 0 && col + 4 <= b.cols) {
      acc += v.x + v.y + v.z + v.w;
      continue;
    }
    const Word w[4] = {v.x, v.y, v.z, v.w};
#pragma unroll
    for (int i = 0; i < 4; ++i)
      if (col + i < b.cols) acc += work(w[i], compute);
  }
  return acc;
}

// The register-staged body of step 5's kernel, where the starter begins, for boxes of
// box_rows rows: each box goes through a 4 KiB buffer 4 rows at a time; each thread loads
// its words of the slice (row by row, coalesced) into registers, stores them (zeros outside
// the matrix), barrier, compute, barrier.
__device__ __forceinline__ void sum_boxes_through_registers(const MatrixJob& job, int box_rows) {
  constexpr int kSliceRows = kTileWords / kBoxCols;
  __shared__ alignas(16) Word slice[kTileWords];
  const std::size_t boxes = box_count(job.in, box_rows);
  Word acc = 0;
  for (std::size_t t = blockIdx.x; t < boxes; t += gridDim.x) {
    const BoxSpan box = box_span(job.in, box_rows, t);
    for (int first = 0; first < box.rows; first += kSliceRows) {
      const BoxSpan b{box.x, box.y + first, box.rows - first < kSliceRows ? box.rows - first : kSliceRows, box.cols};
#pragma unroll
      for (int k = 0; k < kTileWords / kThreads; ++k) {
        const int i = static_cast<int>(threadIdx.x) + k * kThreads, r = i / kBoxCols, c = i % kBoxCols;
        slice[i] = r < b.rows && c < b.cols ? job.in.data[(b.y + r) * job.in.pitch + b.x + c] : 0u;
      }
      __syncthreads();
      acc = compute_box(slice, b, job.compute, acc);
      __syncthreads();
    }
  }
  finish_block(acc, job.partial);
}

}  // namespace ch08
