// Chapter 02 — the pipeline formula and the curve it draws over the chunk count
// (--mode=chunks), beside the one measured. Program only.
//
// The formula (docs/02_streams.md, "The source's formula, chunk by chunk"). The CUDA
// Handbook bounds the speed-up of N processors by Amdahl's law, 1 / (r_s + r_p / N) with
// r_s + r_p = 1. Cut the pipeline into C equal chunks and give each engine e its work W_e
// (copy in, kernel, copy out; with one copy engine, both copies are one engine's work).
// Chunks flow through the engines in order, so the busiest engine, W = max W_e, works
// without a pause, and the others' work hides behind it except one chunk's worth of each,
// before the busiest starts (fill) and after it ends (drain):
//     T(C) = W + (S - W) / C,         S = sum of W_e = the sequential time.
// Its speed-up S / T(C) is the source's formula with r_s = W / S (the busiest engine's
// share cannot be hidden) and N = C: it rises with the chunks towards S / W, and S / W
// reaches the number of engines only when every engine has the same work.
#pragma once

#include "streams.cuh"

#include "cml/run.hpp"

#include <algorithm>
#include <cstddef>

namespace ch02 {

// The formula's staged time, and its speed-up 1 / (r_s + r_p / C).
constexpr double formula_ms(double total, double busiest, double chunks) {
  return busiest + (total - busiest) / chunks;
}
constexpr double formula_speedup(double total, double busiest, double chunks) {
  return total / formula_ms(total, busiest, chunks);
}

// The engines that overlap: the SMs and the copy engines (two directions at once need two).
inline int overlapping_engines(const Measured& m) { return m.copy_engines >= 2 ? 3 : m.copy_engines == 1 ? 2 : 1; }

// The busiest engine's work W. As the formula has it, each engine alone: with one copy
// engine its work is both copies; with none nothing overlaps and W is everything.
inline double busiest_engine(const Measured& m) {
  if (m.copy_engines >= 2) return std::max({m.h2d_ms, m.kernel_ms, m.d2h_ms});
  if (m.copy_engines == 1) return std::max(m.h2d_ms + m.d2h_ms, m.kernel_ms);
  return m.h2d_ms + m.kernel_ms + m.d2h_ms;
}

// W once the two copy directions share the link: the copies together take both_ms, longer
// than either alone (the chapter's contention-aware bound).
inline double busiest_with_shared_link(const Measured& m) {
  return m.copy_engines >= 2 ? std::max(m.kernel_ms, m.both_ms) : busiest_engine(m);
}

// --mode=chunks: the chapter's pipeline in 1 .. max_chunks equal chunks, each checked
// against the CPU, then timed interleaved with the sequential run; beside each, the
// formula's speed-up, with independent engines, with the shared link, and with m.chunk_ms
// added per chunk. False when a result is wrong.
bool chunk_curve(const Problem& p, const Measured& m, std::size_t max_chunks, const cml::Run& run, cudaStream_t stream);

}  // namespace ch02
