// Chapter 08 — what the kernels share that is not the lesson: chapter 07's tile helpers
// (tile_span, compute_tile, finish_block, and the register-staged body every starter
// kernel runs), their 2D counterparts for step 5's boxes, the dispatch of a run-time stage
// count to a kernel template. Device code:
// included by exercise.cu and provided.cu (nvcc) only.
#pragma once

#include "cp_async_ptx.cuh"

#include "../07_memcpy_async/device.cuh"

#include <stdexcept>
#include <string>
#include <type_traits>

namespace ch08 {

using ch07::compute_tile;
using ch07::finish_block;
using ch07::sum_through_registers;
using ch07::tile_span;
using ch07::TileSpan;

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

// Box t of the matrix: its first column and row, and how many of its rows and columns lie
// inside the matrix (kBoxRows and kBoxCols except at the bottom and right edges).
struct BoxSpan {
  int x, y;
  int rows, cols;
};
__host__ __device__ inline BoxSpan box_span(const Matrix& m, std::size_t t) {
  const std::size_t across = box_columns(m);
  const std::size_t x = (t % across) * kBoxCols, y = (t / across) * kBoxRows;
  const std::size_t cols = m.cols - x < static_cast<std::size_t>(kBoxCols) ? m.cols - x : kBoxCols;
  const std::size_t rows = m.rows - y < static_cast<std::size_t>(kBoxRows) ? m.rows - y : kBoxRows;
  return {static_cast<int>(x), static_cast<int>(y), static_cast<int>(rows), static_cast<int>(cols)};
}

// Thread t computes on words 4t .. 4t + 3 of a box in shared memory, laid out row after
// row (kBoxRows rows of kBoxCols words): row t / 64, columns 4 (t % 64) .. + 3. Only words
// inside the matrix count; the whole box must have landed before any thread calls it.
__device__ __forceinline__ Word compute_box(const Word* box, const BoxSpan& b, int compute, Word acc) {
  constexpr int kThreadsPerRow = kBoxCols / 4;
  const int row = static_cast<int>(threadIdx.x) / kThreadsPerRow, col = 4 * (static_cast<int>(threadIdx.x) % kThreadsPerRow);
  if (row >= b.rows) return acc;
  const uint4 v = *reinterpret_cast<const uint4*>(box + row * kBoxCols + col);  // LDS.128
  const Word w[4] = {v.x, v.y, v.z, v.w};
#pragma unroll
  for (int i = 0; i < 4; ++i)
    if (col + i < b.cols) acc += work(w[i], compute);
  return acc;
}

// The register-staged body of step 5's kernel, where the starter begins: each thread loads
// its words of the box (row by row, coalesced) into registers, stores them into the box
// (zeros outside the matrix), barrier, compute, barrier.
__device__ __forceinline__ void sum_boxes_through_registers(const MatrixJob& job) {
  __shared__ alignas(16) Word box[kTileWords];
  const std::size_t boxes = box_count(job.in);
  Word acc = 0;
  for (std::size_t t = blockIdx.x; t < boxes; t += gridDim.x) {
    const BoxSpan b = box_span(job.in, t);
#pragma unroll
    for (int k = 0; k < kTileWords / kThreads; ++k) {
      const int i = static_cast<int>(threadIdx.x) + k * kThreads, r = i / kBoxCols, c = i % kBoxCols;
      box[i] = r < b.rows && c < b.cols ? job.in.data[(b.y + r) * job.in.pitch + b.x + c] : 0u;
    }
    __syncthreads();
    acc = compute_box(box, b, job.compute, acc);
    __syncthreads();
  }
  finish_block(acc, job.partial);
}

}  // namespace ch08
