// Chapter 02 — overlapping transfers and kernels with streams (CUDA Handbook §6.5,
// Best Practices Guide §9.1.2). Measures the sequential copy-in / kernel / copy-out
// against your staged pipeline, with the bounds that say how close it came, and shows what
// silently serialises a pipeline.
//
//   ./lab run 02                                   your plan at the balanced point
//   ./lab run 02 -- --mode=shmoo                   cycles 0..4096: the handbook's figure
//   ./lab run 02 -- --mode=plan                    streams x chunks x issue order
//   ./lab run 02 -- --breaker=all                  what breaks concurrency, measured
//   ./lab run 02 -- --streams=32 --connections=1   false dependencies between streams
#include "owners.hpp"
#include "streams.cuh"

#include "cml/buffers.hpp"
#include "cml/cli.hpp"
#include "cml/device.hpp"
#include "cml/errors.hpp"
#include "cml/exit_codes.hpp"
#include "cml/program.hpp"
#include "cml/stream.hpp"
#include "cml/table.hpp"
#include "cml/timing.hpp"
#include "cml/trace.hpp"
#include "cml/verify.hpp"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <random>
#include <string>
#include <vector>

namespace {

using cml::Clock;
using cml::fixed;
using cml::trace::CopyKind;

const char* order_name(ch02::IssueOrder o) { return o == ch02::IssueOrder::Breadth ? "breadth" : "depth"; }

using ch02::HostInts;
using ch02::Streams;

struct Settings {
  std::string mode = "staged", breaker = "none";
  std::size_t bytes = 256ull << 20;
  std::size_t n = 0;  // ints: bytes / sizeof(int)
  int cycles = -1;    // -1: balanced
  int max_cycles = 4096, step = 256;
  int streams = 0;  // 0: the learner's plan
  std::size_t chunks = 0;
  std::string issue = "plan";
  int connections = 0;
  cml::TimingOptions timing;
  bool csv = false;
  std::string out;
};

using ch02::Workload;

// Poisons the output, runs `run` over p and waits, then checks every element.
cml::VerifyResult check(const std::function<void(const ch02::Problem&)>& run, const ch02::Problem& p) {
  ch02::poison(p);
  run(p);
  CUDA_CHECK(cudaDeviceSynchronize());
  return ch02::verify(p);
}

// ---- Phases and bounds ------------------------------------------------------------------

struct Phases {
  double h2d = 0, d2h = 0, both = 0;  // both: H2D and D2H of everything at once, on two streams
};

Phases measure_copies(const ch02::Problem& p, const Settings& s) {
  cml::Stream a, b;
  const std::size_t bytes = p.n * sizeof(int);
  const auto st = cml::time_interleaved(
      {[&](cudaStream_t x) { CUDA_CHECK(cudaMemcpyAsync(p.device_in, p.host_in, bytes, cudaMemcpyHostToDevice, x)); },
       [&](cudaStream_t x) { CUDA_CHECK(cudaMemcpyAsync(p.host_out, p.device_out, bytes, cudaMemcpyDeviceToHost, x)); },
       [&](cudaStream_t) {
         CUDA_CHECK(cudaMemcpyAsync(p.device_in, p.host_in, bytes, cudaMemcpyHostToDevice, a));
         CUDA_CHECK(cudaMemcpyAsync(p.host_out, p.device_out, bytes, cudaMemcpyDeviceToHost, b));
       }},
      a, s.timing, Clock::Host);
  return {st[0].median_ms, st[1].median_ms, st[2].median_ms};
}

double measure_kernel(const ch02::Problem& p, int cycles, const Settings& s, cudaStream_t stream) {
  return cml::time_work([&](cudaStream_t x) { ch02::launch_add(p.device_in, p.device_out, p.n, cycles, p.add_value, x); },
                        stream, s.timing, Clock::Events).median_ms;
}

// The cycles value at which the kernel takes as long as the slower copy: the kernel's time
// is close to linear in cycles, so two measurements place it.
int balanced_cycles(const ch02::Problem& p, const Phases& ph, const Settings& s, cudaStream_t stream) {
  const double t0 = measure_kernel(p, 0, s, stream);
  const double t1 = measure_kernel(p, 1024, s, stream);
  const double target = std::max(ph.h2d, ph.d2h);
  if (t1 <= t0) return 0;
  const double c = 1024.0 * (target - t0) / (t1 - t0);
  return std::clamp(static_cast<int>(c / 64.0 + 0.5) * 64, 0, 1 << 20);
}

struct Row {
  int cycles;
  double h2d, kernel, d2h, both, sequential, staged;
  double speedup() const { return sequential / staged; }
  double bound() const { return sequential / std::max({h2d, kernel, d2h}); }
  // The copy directions share the link: when both run, each engine is busy `both`.
  double contention_bound() const { return sequential / std::max(both, kernel); }
  double efficiency() const { return speedup() / contention_bound(); }
};

cml::Table rows_table(const std::string& name) {
  return cml::Table(name, {"cycles", "HtoD ms", "kernel ms", "DtoH ms", "sequential ms", "staged ms", "speed-up",
                           "bound", "contention bound", "efficiency"});
}
void add_row(cml::Table& t, const Row& r) {
  t.row({std::to_string(r.cycles), fixed(r.h2d, 3), fixed(r.kernel, 3), fixed(r.d2h, 3), fixed(r.sequential, 3),
         fixed(r.staged, 3), fixed(r.speedup(), 2), fixed(r.bound(), 2), fixed(r.contention_bound(), 2),
         fixed(r.efficiency(), 3)});
}

// Sequential against staged, interleaved, at p.cycles.
Row measure_row(ch02::Problem p, const Phases& ph, const ch02::Plan& plan, const std::vector<cudaStream_t>& streams,
                const Settings& s, cudaStream_t stream) {
  Row r{p.cycles, ph.h2d, measure_kernel(p, p.cycles, s, stream), ph.d2h, ph.both, 0, 0};
  const auto st = cml::time_interleaved(
      {[&](cudaStream_t x) { ch02::run_sequential(p, x); },
       [&](cudaStream_t) { ch02::run_staged(p, streams, plan.chunks, plan.order); }},
      stream, s.timing, Clock::Host);
  r.sequential = st[0].median_ms;
  r.staged = st[1].median_ms;
  return r;
}

// ---- What the trace saw ----------------------------------------------------------------------

struct Overlap {
  bool ok = false;
  std::string error;
  double copy_kernel = 0;  // fraction of the run with a copy and a kernel in flight together
  double in_out = 0;       // fraction with a host-to-device and a device-to-host copy together
  cml::trace::Trace trace;
};

Overlap traced(const std::function<void()>& run) {
  cml::trace::Recorder recorder;
  run();  // a warm-up under the trace: CUPTI holds back the first kernel while it sets up
  recorder.discard();
  run();
  Overlap o;
  o.trace = recorder.stop();
  o.ok = o.trace.ok && !o.trace.kernels.empty();
  o.error = o.trace.ok ? (o.trace.kernels.empty() ? "the trace recorded no kernel" : "") : o.trace.error;
  auto copies = o.trace.copy_intervals(CopyKind::HtoD);
  const auto out = o.trace.copy_intervals(CopyKind::DtoH);
  o.in_out = cml::overlap_fraction(copies, out);
  copies.insert(copies.end(), out.begin(), out.end());
  o.copy_kernel = cml::overlap_fraction(copies, o.trace.kernel_intervals());
  return o;
}

// ---- Breakers: calls that silently serialise a pipeline -------------------------------------

struct Breaker {
  std::string name, what;
};
const std::vector<Breaker>& breakers() {
  static const std::vector<Breaker> list = {
      {"none", "your pipeline as it is"},
      {"null-stream", "every operation on the legacy NULL stream"},
      {"pageable", "host buffers from new[] instead of pinned memory"},
      {"sync-copy", "a 4-byte cudaMemcpy after each chunk"},
      {"device-sync", "cudaDeviceSynchronize after each chunk"},
      {"free-in-loop", "cudaMalloc + cudaFree of 1 MiB after each chunk"},
      {"malloc-in-loop", "cudaMalloc of 1 MiB after each chunk"},
      {"malloc-async", "cudaMallocAsync + cudaFreeAsync after each chunk (the cure)"},
      {"mallochost-in-loop", "cudaMallocHost of 1 MiB after each chunk"},
      {"memset-nonblocking", "cudaMemset after each chunk, non-blocking streams"},
      {"memset-blocking", "cudaMemset after each chunk, blocking streams"},
  };
  return list;
}

// Runs the learner's pipeline with one breaker applied; the returned function runs it once.
class BrokenRun {
 public:
  BrokenRun(const std::string& breaker, Workload& work, const ch02::Plan& plan)
      : plan_(plan), problem_(work.problem) {
    const int count = plan.streams;
    if (breaker == "null-stream") {
      streams_.assign(static_cast<std::size_t>(count), cudaStreamLegacy);
    } else if (breaker == "memset-blocking") {
      for (int i = 0; i < count; ++i) owned_.emplace_back(cudaStreamDefault);
    } else {
      learner_ = std::make_unique<Streams>(count);
      streams_ = learner_->s;
    }
    for (const auto& s : owned_) streams_.push_back(s.get());
    if (breaker == "pageable") {
      pageable_in_.reset(new int[work.problem.n]);
      pageable_out_.reset(new int[work.problem.n]);
      std::memcpy(pageable_in_.get(), work.problem.host_in, work.problem.n * sizeof(int));
      problem_.host_in = pageable_in_.get();
      problem_.host_out = pageable_out_.get();
    }
    scratch_ = cml::DeviceBuffer<int>(1);
    if (breaker == "sync-copy")
      problem_.after_chunk = [this](std::size_t, cudaStream_t) {
        CUDA_CHECK(cudaMemcpy(scratch_.data(), &host_word_, sizeof(int), cudaMemcpyHostToDevice));
      };
    if (breaker == "device-sync")
      problem_.after_chunk = [](std::size_t, cudaStream_t) { CUDA_CHECK(cudaDeviceSynchronize()); };
    if (breaker == "free-in-loop")
      problem_.after_chunk = [](std::size_t, cudaStream_t) {
        void* p = nullptr;  // malloc-in-loop shows cudaMalloc alone: the difference is cudaFree's
        CUDA_CHECK(cudaMalloc(&p, 1 << 20));
        CUDA_CHECK(cudaFree(p));
      };
    if (breaker == "malloc-in-loop")
      problem_.after_chunk = [this](std::size_t, cudaStream_t) {
        void* p = nullptr;
        CUDA_CHECK(cudaMalloc(&p, 1 << 20));
        leaked_device_.push_back(p);
      };
    if (breaker == "malloc-async")
      problem_.after_chunk = [](std::size_t, cudaStream_t s) {
        void* p = nullptr;
        CUDA_CHECK(cudaMallocAsync(&p, 1 << 20, s));
        CUDA_CHECK(cudaFreeAsync(p, s));
      };
    if (breaker == "mallochost-in-loop")
      problem_.after_chunk = [this](std::size_t, cudaStream_t) {
        void* p = nullptr;
        CUDA_CHECK(cudaMallocHost(&p, 1 << 20));
        leaked_host_.push_back(p);
      };
    if (breaker == "memset-nonblocking" || breaker == "memset-blocking")
      problem_.after_chunk = [this](std::size_t, cudaStream_t) { CUDA_CHECK(cudaMemset(scratch_.data(), 0, sizeof(int))); };
  }
  ~BrokenRun() { release(); }
  BrokenRun(const BrokenRun&) = delete;
  BrokenRun& operator=(const BrokenRun&) = delete;

  const ch02::Problem& problem() const { return problem_; }
  void run() { ch02::run_staged(problem_, streams_, plan_.chunks, plan_.order); }
  // Frees what the loop allocated (outside any timed region).
  void release() {
    CUDA_CHECK(cudaDeviceSynchronize());
    for (void* p : leaked_device_) cml::detail::warn_on_error(cudaFree(p), "cudaFree");
    for (void* p : leaked_host_) cml::detail::warn_on_error(cudaFreeHost(p), "cudaFreeHost");
    leaked_device_.clear();
    leaked_host_.clear();
  }

 private:
  ch02::Plan plan_;
  ch02::Problem problem_;
  std::unique_ptr<Streams> learner_;
  std::vector<cml::Stream> owned_;
  std::vector<cudaStream_t> streams_;
  std::unique_ptr<int[]> pageable_in_, pageable_out_;
  cml::DeviceBuffer<int> scratch_;
  int host_word_ = 0;
  std::vector<void*> leaked_device_, leaked_host_;
};

bool run_breakers(const Settings& s, Workload& work, const ch02::Plan& plan, cudaStream_t stream) {
  std::printf("\n== What breaks concurrency (cycles %d, %d streams, %zu chunks, %s-first) ==\n", work.problem.cycles,
              plan.streams, plan.chunks, order_name(plan.order));
  bool ok = true;
  cml::Table table("breakers", {"breaker", "what it does", "staged ms", "speed-up", "copy||kernel", "HtoD||DtoH", "verdict"});
  double unbroken = 0;  // the speed-up with no breaker: what the others are judged against
  for (const Breaker& b : breakers()) {
    if (s.breaker != "all" && s.breaker != b.name && b.name != "none") continue;
    BrokenRun broken(b.name, work, plan);
    const auto r = check([&](const ch02::Problem&) { broken.run(); }, broken.problem());
    broken.release();
    ok &= cml::report(r, "staged with breaker " + b.name);
    const Overlap o = traced([&] {
      broken.run();
      broken.release();
    });
    if (!s.out.empty()) cml::write_file(s.out, "timeline_" + b.name + ".csv", o.trace.to_csv());
    const auto st = cml::time_interleaved({[&](cudaStream_t x) { ch02::run_sequential(broken.problem(), x); },
                                           [&](cudaStream_t) { broken.run(); }},
                                          stream, {1, std::max(3, s.timing.iters / 2)}, Clock::Host);
    broken.release();
    const double speedup = st[0].median_ms / st[1].median_ms;
    if (b.name == "none") unbroken = speedup;
    std::string verdict = "no effect";
    if (!o.ok) verdict = "no trace: " + o.error;
    else if (speedup < 1.15 && o.copy_kernel < 0.1) verdict = "SERIALISED";
    else if (speedup < 1.0) verdict = "slower than sequential: the call itself is slow";
    else if (speedup < 0.9 * unbroken) verdict = "partly serialised";
    else if (speedup < 0.97 * unbroken) verdict = "still overlaps; the calls cost time";
    table.row({b.name, b.what, fixed(st[1].median_ms, 3), fixed(speedup, 2), o.ok ? fixed(o.copy_kernel, 3) : "-",
               o.ok ? fixed(o.in_out, 3) : "-", b.name == "none" ? "(reference)" : verdict});
  }
  table.emit(s.csv, s.out);
  return ok;
}

// ---- Modes ---------------------------------------------------------------------------------------

bool run_plan_sweep(const Settings& s, Workload& work, const Phases& ph, cudaStream_t stream) {
  std::printf("\n== Streams x chunks x issue order at cycles %d ==\n", work.problem.cycles);
  cml::Table plans("plan_choices", {"streams", "chunks", "issue", "staged ms", "speed-up", "efficiency"});
  double best = 0;
  std::string best_text;
  for (const int streams : {2, 4, 8, 16, 32}) {
    Streams ss(streams);
    for (const std::size_t chunks : {4, 8, 16, 32, 64, 128}) {
      if (chunks < static_cast<std::size_t>(streams)) continue;
      for (const auto order : {ch02::IssueOrder::Breadth, ch02::IssueOrder::Depth}) {
        const Row r = measure_row(work.problem, ph, ch02::Plan{streams, chunks, order}, ss.s, s, stream);
        plans.row({std::to_string(streams), std::to_string(chunks), order_name(order), fixed(r.staged, 3),
                   fixed(r.speedup(), 2), fixed(r.efficiency(), 3)});
        if (r.speedup() > best) {
          best = r.speedup();
          best_text = std::to_string(streams) + " streams, " + std::to_string(chunks) + " chunks, " + order_name(order) + "-first";
        }
      }
    }
  }
  plans.emit(s.csv, s.out);
  std::printf("best: %s (%.2fx)\n", best_text.c_str(), best);
  return true;
}

ch02::Plan effective_plan(const Settings& s, const cml::DeviceFacts& facts) {
  ch02::Plan plan = ch02::choose_plan(s.n, facts.async_engine_count);
  if (s.streams > 0) plan.streams = s.streams;
  if (s.chunks > 0) plan.chunks = s.chunks;
  if (s.issue == "breadth") plan.order = ch02::IssueOrder::Breadth;
  if (s.issue == "depth") plan.order = ch02::IssueOrder::Depth;
  plan.streams = std::max(1, plan.streams);
  plan.chunks = std::max<std::size_t>(1, plan.chunks);
  return plan;
}

int run(int argc, char** argv) {
  cml::Cli cli = cml::chapter_cli("02",
               "Chapter 02 - overlapping transfers and kernels with streams: sequential copy-in, kernel,\n"
               "copy-out against your staged pipeline, the bounds, and what serialises a pipeline.");
  std::vector<std::string> breaker_names = {"all"};
  for (const auto& b : breakers()) breaker_names.push_back(b.name);
  Settings s;
  cli.choice("mode", s.mode, {"staged", "sequential", "shmoo", "plan"}, "what to measure")
      .size("size", s.bytes, 4096, 1ull << 40, "bytes of ints to process (the in and out buffers each)")
      .integer("cycles", s.cycles, -1, 1 << 20, "adds per element in AddKernel (-1: where the kernel takes as long as a copy)")
      .integer("max-cycles", s.max_cycles, 0, 1 << 20, "the shmoo's last cycles value")
      .integer("step", s.step, 1, 1 << 20, "the shmoo's cycles step")
      .integer("streams", s.streams, 0, 1024, "streams (0: your choose_plan)")
      .integer("chunks", s.chunks, 0, 1 << 20, "chunks (0: your choose_plan)")
      .choice("issue", s.issue, {"plan", "breadth", "depth"}, "issue order (plan: your choose_plan)")
      .choice("breaker", s.breaker, breaker_names, "apply one way of breaking concurrency, or all of them in turn")
      .integer("connections", s.connections, 0, 32, "sets CUDA_DEVICE_MAX_CONNECTIONS for this run (0: leave it)");
  if (!cli.parse(argc, argv)) return cml::kExitOk;
  s.n = s.bytes / sizeof(int);
  s.timing = cml::TimingOptions{cli.warmup(), cli.iters()};
  s.csv = cli.csv();
  s.out = cli.out_dir();
  if (s.n == 0) throw cml::UsageError("--size: at least 4 bytes (one int)");
  if (s.connections > 0)
    setenv("CUDA_DEVICE_MAX_CONNECTIONS", std::to_string(s.connections).c_str(), 1);  // read when CUDA starts

  const cml::DeviceFacts facts = cml::select_device(cli.device());
  cml::require_fits_device(2 * s.n * sizeof(int), facts, "--size");
  std::printf("%s", cml::describe(facts).c_str());
  if (const char* c = std::getenv("CUDA_DEVICE_MAX_CONNECTIONS")) std::printf("  CUDA_DEVICE_MAX_CONNECTIONS=%s\n", c);
  if (!s.out.empty()) cml::device_table(facts).write_csv(s.out);
  if (facts.async_engine_count == 0)
    std::printf("asyncEngineCount = 0: this GPU cannot copy while a kernel runs; staging cannot help\n");

  cml::Stream stream;
  Workload work(s.n, 5, 0);
  const ch02::Plan plan = effective_plan(s, facts);
  Streams streams(plan.streams);
  const Phases ph = measure_copies(work.problem, s);
  work.problem.cycles = s.cycles >= 0 ? s.cycles : balanced_cycles(work.problem, ph, s, stream);
  std::printf("%s of ints: copy in %.3f ms (%.1f GB/s), copy out %.3f ms (%.1f GB/s), both at once %.3f ms (%.1f GB/s together)\n",
              cml::format_bytes(s.n * sizeof(int)).c_str(), ph.h2d, cml::gbps(s.n * sizeof(int), ph.h2d), ph.d2h,
              cml::gbps(s.n * sizeof(int), ph.d2h), ph.both, cml::gbps(2 * s.n * sizeof(int), ph.both));
  std::printf("plan: %d streams, %zu chunks, %s-first%s\n", plan.streams, plan.chunks, order_name(plan.order),
              s.streams || s.chunks || s.issue != "plan" ? " (from the command line)" : " (your choose_plan)");

  bool ok = true;
  ok &= cml::report(check([&](const ch02::Problem& p) { ch02::run_sequential(p, stream); }, work.problem),
                    "sequential");
  if (s.mode != "sequential")
    ok &= cml::report(check([&](const ch02::Problem& p) { ch02::run_staged(p, streams.s, plan.chunks, plan.order); },
                                 work.problem),
                      "staged");
  if (!ok) return cml::finish(false);  // no measurement of a pipeline that computes wrong

  if (s.breaker != "none") {
    ok &= run_breakers(s, work, plan, stream);
  } else if (s.mode == "plan") {
    ok &= run_plan_sweep(s, work, ph, stream);
  } else if (s.mode == "shmoo") {
    std::printf("\n== Shmoo over cycles (%d streams, %zu chunks, %s-first) ==\n", plan.streams, plan.chunks, order_name(plan.order));
    cml::Table table = rows_table("shmoo");
    double best = 0;
    int best_cycles = 0;
    for (int c = 0; c <= s.max_cycles; c += s.step) {
      ch02::Problem p = work.problem;
      p.cycles = c;
      const Row r = measure_row(p, ph, plan, streams.s, s, stream);
      add_row(table, r);
      if (r.speedup() > best) { best = r.speedup(); best_cycles = c; }
    }
    table.emit(s.csv, s.out);
    std::printf("peak speed-up %.2fx at cycles %d\n", best, best_cycles);
  } else {
    cml::Table table = rows_table(s.mode);
    const Row r = measure_row(work.problem, ph, plan, streams.s, s, stream);
    add_row(table, r);
    std::printf("\n");
    table.emit(s.csv, s.out);
    if (s.mode == "staged") {
      const Overlap seq = traced([&] { ch02::run_sequential(work.problem, stream); });
      const Overlap staged = traced([&] { ch02::run_staged(work.problem, streams.s, plan.chunks, plan.order); });
      if (!s.out.empty()) {
        cml::write_file(s.out, "timeline_sequential.csv", seq.trace.to_csv());
        cml::write_file(s.out, "timeline_staged.csv", staged.trace.to_csv());
      }
      if (staged.ok)
        std::printf("trace of the staged run: a copy and a kernel in flight together %.0f%% of the time, "
                    "copies in both directions %.0f%%\n", 100 * staged.copy_kernel, 100 * staged.in_out);
      else
        std::printf("(trace unavailable: %s)\n", staged.error.c_str());
      std::printf("speed-up %.2fx of a %.2fx bound (%.2fx once the two copy directions share the link): "
                  "efficiency %.2f\n", r.speedup(), r.bound(), r.contention_bound(), r.efficiency());
    }
  }
  return cml::finish(ok);
}

}  // namespace

int main(int argc, char** argv) {
  return cml::run_program([&] { return run(argc, argv); });
}
