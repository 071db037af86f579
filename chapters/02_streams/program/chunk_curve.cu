// Chapter 02 — see chunk_curve.hpp.
#include "chunk_curve.hpp"

#include "equal_chunks.hpp"
#include "harness.hpp"

#include "cml/table.hpp"
#include "cml/timing.hpp"
#include "cml/verify.hpp"

#include <cstdio>
#include <string>
#include <vector>

namespace ch02 {

namespace {

// The formula against what the docs derive from it: three equal phases in C chunks take
// C + 2 chunk-times where sequential takes 3C (2.4x at 8 chunks); one chunk is sequential;
// the limit is the engine count, reached only when the engines' work is equal (the source's
// 2x with one copy engine, copies as long as the kernel).
constexpr bool near(double a, double b) { return (a > b ? a - b : b - a) < 1e-9; }
static_assert(near(formula_speedup(3, 1, 8), 2.4));
static_assert(near(formula_speedup(3, 1, 1), 1.0));
static_assert(near(formula_speedup(3, 1, 1e12), 3.0));
static_assert(near(formula_speedup(2, 1, 1e12), 2.0));
static_assert(near(formula_speedup(4, 2, 1e12), 2.0));  // kernel twice each copy: 2x of 3 engines

using cml::fixed;

}  // namespace

bool chunk_curve(const Problem& p, const Measured& m, std::size_t max_chunks, const cml::Run& run,
                 cudaStream_t stream) {
  const double total = m.h2d_ms + m.kernel_ms + m.d2h_ms;
  const double busiest = busiest_engine(m), shared = busiest_with_shared_link(m);
  std::printf("\n== The pipeline formula over 1..%zu equal chunks (cycles %d) ==\n", max_chunks, p.cycles);
  std::printf(
      "phases alone: copy in %.3f ms, kernel %.3f ms, copy out %.3f ms, S = %.3f ms; both copies at once %.3f ms\n",
      m.h2d_ms, m.kernel_ms, m.d2h_ms, total, m.both_ms);
  std::printf(
      "formula: T(C) = W + (S - W) / C, speed-up S / T(C) = 1 / (r_s + r_p / C), r_s = W / S (the busiest engine's "
      "share)\n");
  std::printf(
      "  %d engines overlap (asyncEngineCount %d): W = %.3f ms, so at most %.2fx however many chunks\n"
      "  (%dx only when every engine has the same work)\n",
      overlapping_engines(m), m.copy_engines, busiest, total / busiest, overlapping_engines(m));
  std::printf(
      "  the copy directions sharing the link: W = %.3f ms, at most %.2fx; and %.1f us per chunk added: T(C) + C o\n",
      shared, total / shared, 1000 * m.chunk_ms);
  note_if_pageable(p);

  // No measurement of a pipeline that computes wrong: every chunk count first, against one
  // CPU reference.
  const std::vector<int> want = expected_output(p);
  EqualChunks pipe;
  bool ok = true;
  for (std::size_t k = 1; k <= max_chunks; ++k) {
    const cml::VerifyResult r = verify_pipeline(
        p, [&] { pipe.issue(p, k, Layout::ChunkStreams); }, want);
    if (!r.ok) ok = cml::report(r, std::to_string(k) + " equal chunks");
  }
  std::printf("%zu pipelines (1..%zu equal chunks) against the CPU: %s\n", max_chunks, max_chunks,
              ok ? "PASSED" : "FAILED");
  if (!ok) return false;

  // All chunk counts timed interleaved with the sequential run, so drift falls on all alike.
  std::vector<cml::Work> works = {[&](cudaStream_t x) { run_sequential(p, x); }};
  for (std::size_t k = 1; k <= max_chunks; ++k)
    works.push_back([&, k](cudaStream_t) { pipe.issue(p, k, Layout::ChunkStreams); });
  const std::vector<cml::Stats> st = cml::time_interleaved(works, stream, run.timing, cml::Clock::Host);
  std::printf("sequential %s (the phases alone add up to %.3f ms)\n", cml::with_noise(st[0]).c_str(), total);

  cml::Table table("chunks", {"chunks", "staged ms", "noise", "speed-up", "formula", "formula, link shared",
                              "formula, link shared + chunk cost", "speed-up / formula, link shared"});
  std::size_t best = 1, best_model = 1;
  double best_model_speedup = 0;
  for (std::size_t k = 1; k <= max_chunks; ++k) {
    const double c = static_cast<double>(k);
    const double measured = st[0].median_ms / st[k].median_ms;
    const double with_cost = total / (formula_ms(total, shared, c) + c * m.chunk_ms);
    if (measured > st[0].median_ms / st[best].median_ms) best = k;
    if (with_cost > best_model_speedup) {
      best_model_speedup = with_cost;
      best_model = k;
    }
    table.row({std::to_string(k), fixed(st[k].median_ms, 3), cml::format_noise(st[k]), fixed(measured, 2),
               fixed(formula_speedup(total, busiest, c), 2), fixed(formula_speedup(total, shared, c), 2),
               fixed(with_cost, 2), fixed(measured / formula_speedup(total, shared, c), 3)});
  }
  run.emit(table);
  std::printf(
      "measured best: %zu chunks (%.2fx); the formula with the shared link and the chunk cost peaks at %zu (%.2fx)\n",
      best, st[0].median_ms / st[best].median_ms, best_model, best_model_speedup);
  return true;
}

}  // namespace ch02
