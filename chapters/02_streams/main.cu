// Chapter 02 — overlapping transfers and kernels with streams (CUDA Handbook §6.5,
// Best Practices Guide §9.1.2). Measures the sequential copy-in / kernel / copy-out
// against your staged pipeline, with the bounds that say how close it came, and shows what
// silently serialises a pipeline.
//
//   ./lab run 02                                   your plan at the balanced point
//   ./lab run 02 -- --mode=shmoo                   cycles 0..4096: the handbook's figure
//   ./lab run 02 -- --mode=plan                    streams x chunks x issue order
//   ./lab run 02 -- --mode=chunks                  the pipeline formula over 1..32 chunks
//   ./lab run 02 -- --mode=kernel-stream           every chunk's kernel on one stream
//   ./lab run 02 -- --mode=host-overlap            the host's own work beside the pipeline
//   ./lab run 02 -- --mode=graph                   the pipeline as one CUDA graph, against issuing it
//   ./lab run 02 -- --breaker=all                  what breaks concurrency, measured
//   ./lab run 02 -- --streams=32 --connections=1   false dependencies between streams
#include "harness.hpp"
#include "program/breakers.hpp"
#include "program/chunk_curve.hpp"
#include "program/graph.hpp"
#include "program/host_overlap.hpp"
#include "program/kernel_stream.hpp"
#include "program/staged_vs_sequential.hpp"
#include "streams.cuh"

#include "cml/errors.hpp"
#include "cml/exit_codes.hpp"
#include "cml/program.hpp"
#include "cml/run.hpp"
#include "cml/stream.hpp"
#include "cml/verify.hpp"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <utility>
#include <vector>

namespace {

using ch02::Breaker;
using ch02::BreakerScratch;
using ch02::BreakerStreams;
using cml::fixed;

const char* order_name(ch02::IssueOrder o) { return o == ch02::IssueOrder::Breadth ? "breadth" : "depth"; }

struct Settings {
  std::string mode = "staged", breaker = "none";
  std::size_t bytes = 256ull << 20;
  int cycles = -1;  // -1: balanced
  int max_cycles = 4096, step = 256;
  int streams = 0;  // 0: the learner's plan
  std::size_t chunks = 0;
  std::size_t max_chunks = 32;  // --mode=chunks
  std::string issue = "plan";
  int connections = 0;
  std::size_t n() const { return bytes / sizeof(int); }
};

// The learner's choose_plan, given what was measured, with what the command line overrides.
ch02::Plan effective_plan(const Settings& s, const ch02::Measured& m) {
  ch02::Plan plan = ch02::choose_plan(s.n(), m);
  if (s.streams > 0) plan.streams = s.streams;
  if (s.chunks > 0) plan.chunks = s.chunks;
  if (s.issue == "breadth") plan.order = ch02::IssueOrder::Breadth;
  if (s.issue == "depth") plan.order = ch02::IssueOrder::Depth;
  plan.streams = std::max(1, plan.streams);
  plan.chunks = std::max<std::size_t>(1, plan.chunks);
  return plan;
}

// What every mode works on: the workload in the learner's buffers, the copy phases, the
// cycles (given, or where the kernel takes as long as a copy), one chunk's fixed cost, and
// the plan chosen from those measurements with its streams.
struct Context {
  Context(const Settings& settings, cml::Run opened)
      : s(settings),
        run(std::move(opened)),
        work(s.n(), 5, 0),
        copies(ch02::measure_copies(work.problem, run.timing)),
        plan(choose()),
        streams(plan.streams) {}
  void issue_staged() { ch02::run_staged(work.problem, streams.s, plan.chunks, plan.order); }

  ch02::Plan choose() {
    work.problem.cycles = s.cycles >= 0 ? s.cycles : ch02::balanced_cycles(work.problem, copies, run.timing, stream);
    const double kernel_ms = ch02::measure_kernel(work.problem, work.problem.cycles, run.timing, stream);
    measured = ch02::measured(copies, kernel_ms, ch02::measure_chunk_cost(work.problem, run.timing),
                              run.facts.async_engine_count);
    return effective_plan(s, measured);
  }

  Settings s;
  cml::Run run;
  cml::Stream stream;
  ch02::Workload work;
  ch02::Phases copies;
  ch02::Measured measured;
  ch02::Plan plan;
  ch02::Streams streams;
};

// ---- Breakers: calls that silently serialise a pipeline -------------------------------------

void memset_word(BreakerScratch& x, cudaStream_t) { CUDA_CHECK(cudaMemset(x.word.data(), 0, sizeof(int))); }

// Each changes the learner's run in one way: a call after each chunk, the streams, or pageable buffers.
const std::vector<Breaker> kBreakers = {
    {"none", "your pipeline as it is"},
    {"null-stream", "every operation on the legacy NULL stream", nullptr, BreakerStreams::Legacy},
    {"pageable", "host buffers from new[] instead of pinned memory", nullptr, BreakerStreams::Yours, true},
    {"sync-copy", "a 4-byte cudaMemcpy after each chunk",
     [](BreakerScratch& x, cudaStream_t) {
       CUDA_CHECK(cudaMemcpy(x.word.data(), &x.host_word, sizeof(int), cudaMemcpyHostToDevice));
     }},
    {"device-sync", "cudaDeviceSynchronize after each chunk",
     [](BreakerScratch&, cudaStream_t) { CUDA_CHECK(cudaDeviceSynchronize()); }},
    {"free-in-loop", "cudaMalloc + cudaFree of 1 MiB after each chunk",
     [](BreakerScratch&, cudaStream_t) {
       void* p = nullptr;  // malloc-in-loop shows cudaMalloc alone: the difference is cudaFree's
       CUDA_CHECK(cudaMalloc(&p, 1 << 20));
       CUDA_CHECK(cudaFree(p));
     }},
    {"malloc-in-loop", "cudaMalloc of 1 MiB after each chunk",
     [](BreakerScratch& x, cudaStream_t) { CUDA_CHECK(cudaMalloc(&x.device_allocations.emplace_back(), 1 << 20)); }},
    {"malloc-async", "cudaMallocAsync + cudaFreeAsync after each chunk (the cure)",
     [](BreakerScratch&, cudaStream_t s) {
       void* p = nullptr;
       CUDA_CHECK(cudaMallocAsync(&p, 1 << 20, s));
       CUDA_CHECK(cudaFreeAsync(p, s));
     }},
    {"mallochost-in-loop", "cudaMallocHost of 1 MiB after each chunk",
     [](BreakerScratch& x, cudaStream_t) { CUDA_CHECK(cudaMallocHost(&x.host_allocations.emplace_back(), 1 << 20)); }},
    {"memset-nonblocking", "cudaMemset after each chunk, non-blocking streams", memset_word},
    {"memset-blocking", "cudaMemset after each chunk, blocking streams", memset_word, BreakerStreams::Blocking},
};

bool breakers(Context& c) {
  std::printf("\n== What breaks concurrency (cycles %d, %d streams, %zu chunks, %s-first) ==\n", c.work.problem.cycles,
              c.plan.streams, c.plan.chunks, order_name(c.plan.order));
  bool ok = true;
  cml::Table table("breakers", {"breaker", "what it does", "staged ms", "noise", "speed-up", "copy||kernel",
                                "HtoD||DtoH", "verdict"});
  double unbroken = 0;  // the speed-up with no breaker: what the others are judged against
  for (const Breaker& b : kBreakers) {
    const std::string name = b.name;
    if (c.s.breaker != "all" && c.s.breaker != name && name != "none") continue;
    ch02::BrokenRun broken(b, c.work.problem, c.plan);
    ok &= cml::report(ch02::verify_pipeline(broken.problem(), [&] { broken.run(); }), "staged with breaker " + name);
    broken.release();
    const ch02::Overlap o = ch02::traced([&] {
      broken.run();
      broken.release();
    });
    c.run.write("timeline_" + name + ".csv", o.trace.to_csv());
    const auto st = cml::time_interleaved(
        {[&](cudaStream_t x) { ch02::run_sequential(broken.problem(), x); }, [&](cudaStream_t) { broken.run(); }},
        c.stream, {1, std::max(3, c.run.timing.iters / 2)}, cml::Clock::Host);
    broken.release();
    const double speedup = st[0].median_ms / st[1].median_ms;
    if (name == "none") unbroken = speedup;
    std::string verdict = "no effect";
    if (!o.ok)
      verdict = "no trace: " + o.error;
    else if (speedup < 1.15 && o.copy_kernel < 0.1)
      verdict = "SERIALISED";
    else if (speedup < 1.0)
      verdict = "slower than sequential: the call itself is slow";
    else if (speedup < 0.9 * unbroken)
      verdict = "partly serialised";
    else if (speedup < 0.97 * unbroken)
      verdict = "still overlaps; the calls cost time";
    table.row({name, b.what, fixed(st[1].median_ms, 3), cml::format_noise(st[1]), fixed(speedup, 2),
               o.ok ? fixed(o.copy_kernel, 3) : "-", o.ok ? fixed(o.in_out, 3) : "-",
               name == "none" ? "(reference)" : verdict});
  }
  c.run.emit(table);
  return ok;
}

// ---- Modes ---------------------------------------------------------------------------------------

// Sequential against staged at the run's cycles, as a one-row table called `name`.
ch02::Row one_row(Context& c, const std::string& name) {
  cml::Table table = ch02::rows_table(name);
  const ch02::Row r = ch02::measure_row(c.work.problem, c.copies, c.plan, c.streams.s, c.run.timing, c.stream);
  ch02::add_row(table, r);
  std::printf("\n");
  c.run.emit(table);
  return r;
}

bool sequential(Context& c) {
  one_row(c, "sequential");
  return true;
}

bool staged(Context& c) {
  const ch02::Row r = one_row(c, "staged");
  const ch02::Overlap seq = ch02::traced([&] { ch02::run_sequential(c.work.problem, c.stream); }, true);
  const ch02::Overlap staged = ch02::traced([&] { c.issue_staged(); }, true);
  c.run.write("timeline_sequential.csv", seq.trace.to_csv());
  c.run.write("timeline_staged.csv", staged.trace.to_csv());
  if (staged.ok)
    std::printf(
        "trace of the staged run: a copy and a kernel in flight together %.0f%% of the time, "
        "copies in both directions %.0f%%\n",
        100 * staged.copy_kernel, 100 * staged.in_out);
  else
    std::printf("(trace unavailable: %s)\n", staged.error.c_str());
  std::printf("speed-up %s of a %.2fx bound (%.2fx once the two copy directions share the link): efficiency %.2f\n",
              cml::ratio_text(r.sequential, r.staged).c_str(), r.bound(), r.contention_bound(), r.efficiency());
  return true;
}

bool shmoo(Context& c) {
  std::printf("\n== Shmoo over cycles (%d streams, %zu chunks, %s-first) ==\n", c.plan.streams, c.plan.chunks,
              order_name(c.plan.order));
  cml::Table table = ch02::rows_table("shmoo");
  double best = 0;
  int best_cycles = 0;
  for (int cycles = 0; cycles <= c.s.max_cycles; cycles += c.s.step) {
    ch02::Problem p = c.work.problem;
    p.cycles = cycles;
    const ch02::Row r = ch02::measure_row(p, c.copies, c.plan, c.streams.s, c.run.timing, c.stream);
    ch02::add_row(table, r);
    if (r.speedup() > best) {
      best = r.speedup();
      best_cycles = cycles;
    }
  }
  c.run.emit(table);
  std::printf("peak speed-up %.2fx at cycles %d\n", best, best_cycles);
  return true;
}

bool plan_sweep(Context& c) {
  std::printf("\n== Streams x chunks x issue order at cycles %d ==\n", c.work.problem.cycles);
  cml::Table plans("plan_choices", {"streams", "chunks", "issue", "staged ms", "noise", "speed-up", "efficiency"});
  double best = 0;
  std::string best_text;
  for (const int streams : {2, 4, 8, 16, 32}) {
    ch02::Streams ss(streams);
    for (const std::size_t chunks : {4, 8, 16, 32, 64, 128}) {
      if (chunks < static_cast<std::size_t>(streams)) continue;
      for (const auto order : {ch02::IssueOrder::Breadth, ch02::IssueOrder::Depth}) {
        const ch02::Plan plan{streams, chunks, order};
        const ch02::Row r = ch02::measure_row(c.work.problem, c.copies, plan, ss.s, c.run.timing, c.stream);
        plans.row({std::to_string(streams), std::to_string(chunks), order_name(order), fixed(r.staged.median_ms, 3),
                   cml::format_noise(r.staged), fixed(r.speedup(), 2), fixed(r.efficiency(), 3)});
        if (r.speedup() > best) {
          best = r.speedup();
          best_text = std::to_string(streams) + " streams, " + std::to_string(chunks) + " chunks, " +
                      order_name(order) + "-first";
        }
      }
    }
  }
  c.run.emit(plans);
  std::printf("best: %s (%.2fx)\n", best_text.c_str(), best);
  return true;
}

bool formula_over_chunks(Context& c) {
  return ch02::chunk_curve(c.work.problem, c.measured, c.s.max_chunks, c.run, c.stream);
}

// At --chunks, else the plan's chunk count; a plan of one or two chunks has nothing for one
// kernel stream to show, so 32 then.
bool one_kernel_stream(Context& c) {
  std::size_t chunks = c.plan.chunks;
  if (c.s.chunks == 0 && chunks < 3) {
    std::printf("(the plan has %zu chunk(s), too few to overlap: 32 chunks instead; --chunks=K sets it)\n", chunks);
    chunks = 32;
  }
  return ch02::kernel_stream(c.work.problem, chunks, c.run, c.stream);
}

bool as_graph(Context& c) { return ch02::graph_mode(c.work.problem, c.plan, c.copies, c.streams.s, c.run, c.stream); }

bool host_beside(Context& c) { return ch02::host_overlap_mode(c.work.problem, c.plan, c.streams.s, c.run, c.stream); }

const std::vector<cml::Mode<Context>> kModes = {
    {"staged", "sequential against your staged pipeline, with the trace of its overlap", staged},
    {"sequential", "the same table, without checking or tracing the staged pipeline", sequential},
    {"shmoo", "the speed-up and its bounds over cycles 0..max-cycles", shmoo},
    {"plan", "every streams x chunks x issue order combination", plan_sweep},
    {"chunks", "the pipeline formula's speed-up at 1..max-chunks equal chunks, beside the measured one",
     formula_over_chunks},
    {"kernel-stream", "every chunk's kernel on one stream and the copies on others, against a stream per chunk, traced",
     one_kernel_stream},
    {"graph", "your staged pipeline captured into a CUDA graph, against issuing it, at 1x, 2x and 4x the plan's chunks",
     as_graph},
    {"host-overlap", "the host's own work while your staged pipeline runs, against after it, pinned and pageable",
     host_beside},
};

// Both pipelines must compute right before either is measured (staged is not run in
// --mode=sequential).
bool verify_pipelines(Context& c) {
  const ch02::Problem& p = c.work.problem;
  bool ok = cml::report(ch02::verify_pipeline(p, [&] { ch02::run_sequential(p, c.stream); }), "sequential");
  if (c.s.mode != "sequential") ok &= cml::report(ch02::verify_pipeline(p, [&] { c.issue_staged(); }), "staged");
  return ok;
}

int run(int argc, char** argv) {
  Settings s;
  cml::Cli cli =
      cml::chapter_cli("02",
                       "Chapter 02 - overlapping transfers and kernels with streams: sequential copy-in, kernel,\n"
                       "copy-out against your staged pipeline, the bounds, and what serialises a pipeline.",
                       kModes, s.mode, false);
  std::vector<std::string> breaker_names = {"all"};
  for (const Breaker& b : kBreakers) breaker_names.emplace_back(b.name);
  cli.size("size", s.bytes, 4096, 1ull << 40, "bytes of ints to process (the in and out buffers each)")
      .integer("cycles", s.cycles, -1, 1 << 20,
               "adds per element in AddKernel (-1: where the kernel takes as long as a copy)")
      .integer("max-cycles", s.max_cycles, 0, 1 << 20, "the shmoo's last cycles value")
      .integer("step", s.step, 1, 1 << 20, "the shmoo's cycles step")
      .integer("streams", s.streams, 0, 1024, "streams (0: your choose_plan)")
      .integer("chunks", s.chunks, 0, 1 << 20, "chunks (0: your choose_plan)")
      .integer("max-chunks", s.max_chunks, 1, 1024, "the largest chunk count of --mode=chunks")
      .choice("issue", s.issue, {"plan", "breadth", "depth"}, "issue order (plan: your choose_plan)")
      .choice("breaker", s.breaker, breaker_names, "apply one way of breaking concurrency, or all of them in turn")
      .integer("connections", s.connections, 0, 32, "sets CUDA_DEVICE_MAX_CONNECTIONS for this run (0: leave it)");
  if (!cli.parse(argc, argv)) return cml::kExitOk;
  if (s.n() == 0) throw cml::UsageError("--size: at least 4 bytes (one int)");
  if (s.connections > 0)
    setenv("CUDA_DEVICE_MAX_CONNECTIONS", std::to_string(s.connections).c_str(), 1);  // read when CUDA starts

  cml::Run opened = cml::open_run(cli, cml::Footprint{2 * s.n() * sizeof(int), "--size"});
  if (const char* n = std::getenv("CUDA_DEVICE_MAX_CONNECTIONS")) std::printf("  CUDA_DEVICE_MAX_CONNECTIONS=%s\n", n);
  if (opened.facts.async_engine_count == 0)
    std::printf("asyncEngineCount = 0: this GPU cannot copy while a kernel runs; staging cannot help\n");
  Context c(s, std::move(opened));
  const std::size_t bytes = s.n() * sizeof(int);
  const ch02::Phases& ph = c.copies;
  std::printf(
      "%s of ints: copy in %.3f ms (%.1f GB/s), copy out %.3f ms (%.1f GB/s), both at once %.3f ms (%.1f GB/s "
      "together)\n",
      cml::format_bytes(bytes).c_str(), ph.h2d, cml::gbps(bytes, ph.h2d), ph.d2h, cml::gbps(bytes, ph.d2h), ph.both,
      cml::gbps(2 * bytes, ph.both));
  std::printf("one chunk's fixed cost (calls, launch, copy set-ups; a chunk of one int): %.1f us\n",
              1000 * c.measured.chunk_ms);
  std::printf("plan: %d streams, %zu chunks, %s-first%s\n", c.plan.streams, c.plan.chunks, order_name(c.plan.order),
              s.streams || s.chunks || s.issue != "plan" ? " (from the command line)" : " (your choose_plan)");

  if (!verify_pipelines(c)) return cml::finish(false);  // no measurement of a pipeline that computes wrong
  return cml::finish(s.breaker != "none" ? breakers(c) : cml::run_modes(kModes, s.mode, c));
}

}  // namespace

int main(int argc, char** argv) {
  return cml::run_program([&] { return run(argc, argv); });
}
