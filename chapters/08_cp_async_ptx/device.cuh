// Chapter 08 — the device code exercise.cu and provided.cu share that is not the lesson.
// Device code: nvcc only.
//
// First, the small wrappers over the PTX instructions the chapter uses, one per
// instruction (cml/ptx.cuh, where each says what it does and what it compiles to), and the
// wait that gives up. The one wrapper that is not there is cp.async itself: you write it
// (exercise.cu, step 1). Shared-memory operands of these instructions are addresses in the
// .shared state space (32 bits), not generic pointers: each wrapper converts with
// __cvta_generic_to_shared, so you pass the ordinary pointer to the __shared__ object. The
// sm_90 instructions (mbarrier transaction counts, bulk copies, tensor copies) exist from
// PTX for sm_90 on; for older targets these wrappers compile to a trap: the program and the
// tests check the GPU before launching a kernel that uses them.
//
// Then the tile helpers: the tiled sum's (tile_span, compute_tile, finish_block, and the
// register-staged body every starter kernel runs, from cml/tile_sum.cuh), their 2D
// counterparts for step 5's boxes, and the dispatch of a run-time stage count to a kernel
// template.
#pragma once

#include "cp_async_ptx.cuh"

#include "cml/ptx.cuh"

#include <cuda.h>  // CUtensorMap

#include <cstdint>
#include <cstdio>
#include <stdexcept>
#include <string>
#include <type_traits>

namespace ch08 {

// ==== PTX wrappers ============================================================================
// One per instruction, in cml/ptx.cuh (chapter 09 uses them too): read it there. Each says
// what the instruction does and what it compiles to.
using cml::ptx::bulk_copy_to_shared;
using cml::ptx::cp_async_commit;
using cml::ptx::cp_async_wait;
using cml::ptx::cp_async_wait_all;
using cml::ptx::fence_mbarrier_init;
using cml::ptx::fence_proxy_async_shared;
using cml::ptx::global_ns;
using cml::ptx::mbarrier_arrive_expect_tx;
using cml::ptx::mbarrier_init;
using cml::ptx::mbarrier_test_wait_parity;
using cml::ptx::mbarrier_try_wait_parity;
using cml::ptx::shared_address;
using cml::ptx::tensor_load_2d;

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
    const unsigned long long limit =
        report != nullptr && report->limit_ns != 0 ? report->limit_ns : kDefaultWaitLimitNs;
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
