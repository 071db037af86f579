// Chapter 02 — see kernel_stream.hpp.
#include "kernel_stream.hpp"

#include "equal_chunks.hpp"
#include "harness.hpp"

#include "cml/intervals.hpp"
#include "cml/table.hpp"
#include "cml/timing.hpp"
#include "cml/verify.hpp"

#include <cstdint>
#include <cstdio>
#include <set>
#include <string>
#include <vector>

namespace ch02 {

namespace {

// What the trace says about a layout's kernels.
struct KernelFacts {
  std::size_t streams = 0;  // distinct streams they ran on
  double together = 0;      // fraction of the time some kernel ran during which two or more did
};

KernelFacts kernel_facts(const cml::trace::Trace& trace) {
  std::set<std::uint32_t> ids;
  for (const auto& k : trace.kernels) ids.insert(k.stream_id);
  const std::vector<cml::Interval> kernels = trace.kernel_intervals();
  const std::uint64_t busy = cml::union_length(kernels);
  return {ids.size(), busy ? static_cast<double>(cml::self_overlap_length(kernels)) / static_cast<double>(busy) : 0.0};
}

}  // namespace

bool kernel_stream(const Problem& p, std::size_t chunks, const cml::Run& run, cudaStream_t stream) {
  using cml::fixed;
  std::printf("\n== Every chunk's kernel on one stream (%zu equal chunks, cycles %d) ==\n", chunks, p.cycles);
  std::printf(
      "the CUDA Handbook: unless the kernels must run concurrently, the chunks' kernels may be issued in order\n"
      "  to one stream and the copies still overlap them. Across streams an event orders each chunk (its kernel\n"
      "  after its copy in, its copy out after its kernel): cudaStreamWaitEvent makes a stream wait, not the host\n");
  note_if_pageable(p);

  const std::vector<int> want = expected_output(p);
  EqualChunks pipe;
  bool ok = true;
  for (const LayoutInfo& l : layouts())
    ok &= cml::report(verify_pipeline(
                          p, [&] { pipe.issue(p, chunks, l.layout); }, want),
                      std::string("layout ") + l.name);
  if (!ok) return false;  // no measurement of a pipeline that computes wrong

  std::vector<cml::Work> works = {[&](cudaStream_t x) { run_sequential(p, x); }};
  for (const LayoutInfo& l : layouts()) works.push_back([&, l](cudaStream_t) { pipe.issue(p, chunks, l.layout); });
  const std::vector<cml::Stats> st = cml::time_interleaved(works, stream, run.timing, cml::Clock::Host);

  cml::Table table("kernel_stream", {"layout", "what", "staged ms", "noise", "speed-up", "copy||kernel", "HtoD||DtoH",
                                     "kernels at once", "kernel streams"});
  table.row({"sequential", "copy in, kernel, copy out, all of it on one stream", fixed(st[0].median_ms, 3),
             cml::format_noise(st[0]), "1.00", "-", "-", "-", "1"});
  std::string trace_error;
  for (std::size_t k = 0; k < layouts().size(); ++k) {
    const LayoutInfo& l = layouts()[k];
    const Overlap o = traced([&] { pipe.issue(p, chunks, l.layout); });
    run.write(std::string("layout_") + l.name + ".csv", o.trace.to_csv());
    std::string together = "-", streams = "-";
    if (o.ok) {
      const KernelFacts f = kernel_facts(o.trace);
      together = fixed(f.together, 3);
      streams = std::to_string(f.streams);
      if (l.layout != Layout::ChunkStreams && f.streams != 1) {
        std::printf("layout %s: FAILED: its kernels ran on %zu streams, not one\n", l.name, f.streams);
        ok = false;
      }
    } else {
      trace_error = o.error;
    }
    table.row({l.name, l.what, fixed(st[k + 1].median_ms, 3), cml::format_noise(st[k + 1]),
               fixed(st[0].median_ms / st[k + 1].median_ms, 2), o.ok ? fixed(o.copy_kernel, 3) : "-",
               o.ok ? fixed(o.in_out, 3) : "-", together, streams});
  }
  run.emit(table);
  if (!trace_error.empty()) std::printf("(trace unavailable: %s)\n", trace_error.c_str());
  std::printf(
      "kernels at once: the share of the kernels' busy time with two or more running; one stream runs its\n"
      "  kernels one after another, so there it is 0, and the copies still overlap them (copy||kernel)\n");
  return ok;
}

}  // namespace ch02
