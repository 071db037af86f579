// Chapter 02 — see staged_vs_sequential.hpp.
#include "staged_vs_sequential.hpp"

namespace ch02 {

Row measure_row(const Problem& p, const Phases& copies, const Plan& plan, const std::vector<cudaStream_t>& streams,
                cml::TimingOptions timing, cudaStream_t stream) {
  Row r{p.cycles, copies.h2d, measure_kernel(p, p.cycles, timing, stream), copies.d2h, copies.both, {}, {}};
  const auto st = cml::time_interleaved({[&](cudaStream_t x) { run_sequential(p, x); },
                                         [&](cudaStream_t) { run_staged(p, streams, plan.chunks, plan.order); }},
                                        stream, timing, cml::Clock::Host);
  r.sequential = st[0];
  r.staged = st[1];
  return r;
}

cml::Table rows_table(const std::string& name) {
  return cml::Table(name, {"cycles", "HtoD ms", "kernel ms", "DtoH ms", "sequential ms", "sequential noise",
                           "staged ms", "staged noise", "speed-up", "bound", "contention bound", "efficiency"});
}

void add_row(cml::Table& table, const Row& r) {
  using cml::fixed;
  table.row({std::to_string(r.cycles), fixed(r.h2d, 3), fixed(r.kernel, 3), fixed(r.d2h, 3),
             fixed(r.sequential.median_ms, 3), cml::format_noise(r.sequential), fixed(r.staged.median_ms, 3),
             cml::format_noise(r.staged), fixed(r.speedup(), 2), fixed(r.bound(), 2), fixed(r.contention_bound(), 2),
             fixed(r.efficiency(), 3)});
}

}  // namespace ch02
