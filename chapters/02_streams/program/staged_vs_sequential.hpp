// Chapter 02 — one row of the program's tables: the sequential pipeline against the learner's
// staged one at one cycles value, timed interleaved, beside the phases alone and the bounds
// that say how close staging came. Program only: the tests never include it.
#pragma once

#include "harness.hpp"
#include "streams.cuh"

#include "cml/table.hpp"
#include "cml/timing.hpp"

#include <algorithm>
#include <string>
#include <vector>

namespace ch02 {

struct Row {
  int cycles;
  double h2d, kernel, d2h, both;  // the phases alone; both: the two copy directions at once
  cml::Stats sequential, staged;
  double speedup() const { return sequential.median_ms / staged.median_ms; }
  // Staging hides all phases but the longest: sequential time over it is the best speed-up.
  double bound() const { return sequential.median_ms / std::max({h2d, kernel, d2h}); }
  // The copy directions share the link: when both run, each engine is busy `both`.
  double contention_bound() const { return sequential.median_ms / std::max(both, kernel); }
  double efficiency() const { return speedup() / contention_bound(); }
};

// Sequential against staged (streams, plan.chunks, plan.order), interleaved, at p.cycles.
Row measure_row(const Problem& p, const Phases& copies, const Plan& plan, const std::vector<cudaStream_t>& streams,
                cml::TimingOptions timing, cudaStream_t stream);

// A table of rows, called `name` (its CSV file's name with --out).
cml::Table rows_table(const std::string& name);
void add_row(cml::Table& table, const Row& r);

}  // namespace ch02
