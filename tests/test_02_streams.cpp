// Chapter 02 — overlapping transfers and kernels with streams: the tests of exercise.cu,
// step by step. Mechanism comes from the CUPTI trace of your pipeline: which streams the
// work ran on, what memory the copies used, and for what fraction of the run a copy and a
// kernel were in flight together. Speed is staged against sequential, in this process.
//
//   ./lab check 02                        against your exercise.cu
//   meson test -C build "ch02 solution"   against the solution
#include "gpu.hpp"
#include "harness.hpp"
#include "pinned.hpp"
#include "streams.cuh"

#include "cml/stream.hpp"
#include "cml/timing.hpp"
#include "cml/trace.hpp"

#include <algorithm>
#include <set>
#include <string>
#include <vector>

using cml::test::is_pinned;
using cml::trace::CopyKind;
using cml::trace::MemoryKind;

namespace {

using ch02::HostInts;
using ch02::Streams;

// n ints over the learner's buffers, seeded by n.
struct Setup : ch02::Workload {
  Setup(std::size_t n, int cycles) : Workload(n, static_cast<unsigned>(n), cycles) {}
};

// The cycles at which AddKernel over s's ints takes as long as the slower copy (the
// program's balanced point), measured with few repetitions: the tests need it close, not exact.
int balanced_cycles(Setup& s) {
  cml::Stream stream;
  const cml::TimingOptions quick{1, 5};
  return ch02::balanced_cycles(s.problem, ch02::measure_copies(s.problem, quick), quick, stream);
}

}  // namespace

// ---- Step 1 ------------------------------------------------------------------------------

TEST_CASE("step 1: the sequential pipeline gives the right result through your buffers", "[ch02][step1][correctness]") {
  cml::test::device();
  Setup s(100003, 7);
  Streams streams(1);
  const auto r = ch02::verify_pipeline(s.problem, [&] { ch02::run_sequential(s.problem, streams.s.front()); });
  INFO(r.describe());
  CHECK(r.ok);
}

TEST_CASE("step 1: create_streams gives distinct non-blocking streams and the buffers are pinned", "[ch02][step1][mechanism]") {
  cml::test::device();
  Streams streams(4);
  REQUIRE(streams.s.size() == 4);
  std::set<cudaStream_t> distinct(streams.s.begin(), streams.s.end());
  INFO("create_streams returned the NULL stream or the same stream twice: create each with "
       "cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking) (step 1; ./lab hint 02)");
  REQUIRE(distinct.size() == 4);
  REQUIRE(distinct.count(nullptr) == 0);
  for (cudaStream_t s : streams.s) {
    unsigned flags = 0;
    CUDA_CHECK(cudaStreamGetFlags(s, &flags));
    INFO("a stream is blocking: it waits for the legacy NULL stream; use cudaStreamNonBlocking (step 1)");
    CHECK((flags & cudaStreamNonBlocking) != 0);
  }
  HostInts buf(1000);
  INFO("allocate_host_ints returned pageable memory: copies from it cannot overlap anything; use cudaMallocHost (step 1)");
  CHECK(is_pinned(buf.p));
}

// ---- Step 2 ------------------------------------------------------------------------------

TEST_CASE("step 2: the staged pipeline gives the right result", "[ch02][step2][correctness]") {
  cml::test::device();
  Setup s(1 << 20, 16);
  Streams streams(4);
  for (const auto order : {ch02::IssueOrder::Breadth, ch02::IssueOrder::Depth}) {
    const auto r = ch02::verify_pipeline(s.problem, [&] { ch02::run_staged(s.problem, streams.s, 8, order); });
    INFO((order == ch02::IssueOrder::Breadth ? "breadth-first: " : "depth-first: ") << r.describe());
    CHECK(r.ok);
  }
}

TEST_CASE("step 2: the staged pipeline overlaps copies with kernels on your streams", "[ch02][step2][mechanism]") {
  cml::test::device();
  CML_REQUIRE_TRACING();
  Setup s(std::size_t{32} << 20, 0);  // 128 MiB each way
  s.problem.cycles = balanced_cycles(s);
  Streams streams(4);
  const std::size_t chunks = 16;
  // Depth-first: breadth-first with fewer streams than chunks serialises by stream order
  // itself (docs/02_streams.md), which is the plan's business (step 4), not this step's.
  const ch02::Overlap o =
      ch02::traced([&] { ch02::run_staged(s.problem, streams.s, chunks, ch02::IssueOrder::Depth); });
  const cml::trace::Trace& t = o.trace;
  CML_REQUIRE_TRACE_OK(t);
  const auto kernels = t.kernels_named("AddKernel");
  const auto in = t.copies_of(CopyKind::HtoD);
  const auto out = t.copies_of(CopyKind::DtoH);
  {
    INFO("run_staged issued " << kernels.size() << " kernels and " << in.size() << " copies in for " << chunks
         << " chunks: give every chunk its own copy in, kernel and copy out (step 2; ./lab hint 02)");
    REQUIRE(kernels.size() >= chunks);
    REQUIRE(in.size() >= chunks);
    REQUIRE(out.size() >= chunks);
  }
  const std::uint32_t legacy = cml::trace::stream_id_of(cudaStreamLegacy);
  std::set<std::uint32_t> used;
  for (const auto& k : kernels) used.insert(k.stream_id);
  for (const auto& c : t.copies) used.insert(c.stream_id);
  {
    INFO("work ran on the legacy NULL stream, which serialises everything: pass streams[c % streams.size()] to "
         "cudaMemcpyAsync and launch_add (breaker: null-stream)");
    CHECK(used.count(legacy) == 0);
    INFO("all work ran on " << used.size() << " stream(s): spread the chunks over the streams you were given");
    CHECK(used.size() >= 2);
  }
  for (const auto& c : in) {
    INFO("a copy in came from " << cml::trace::to_string(c.src) << " memory: copies from pageable memory cannot overlap "
         "(breaker: pageable)");
    CHECK(c.src == MemoryKind::Pinned);
  }
  const double together = o.copy_kernel;
  INFO("a copy and a kernel were in flight together for " << 100 * together << "% of the run; want at least 50%. "
       "Something waits inside your loop: a cudaMemcpy (not Async), a cudaDeviceSynchronize or cudaStreamSynchronize, "
       "a cudaFree (breakers: sync-copy, device-sync, free-in-loop)");
  CHECK(together >= 0.5);
  if (cml::test::device().async_engine_count >= 2) {
    const double both = o.in_out;
    INFO("copies in and out were in flight together for " << 100 * both << "% of the run; this GPU has "
         << cml::test::device().async_engine_count << " copy engines, so they can overlap: want at least 20%");
    CHECK(both >= 0.2);
  }
}

// ---- Step 3 ------------------------------------------------------------------------------

TEST_CASE("step 3: sizes the chunk count does not divide give the right result", "[ch02][step3][correctness]") {
  cml::test::device();
  Streams streams(3);
  struct Shape { std::size_t n, chunks; };
  for (const Shape sh : {Shape{8 * 1000 + 5, 8}, Shape{1000003, 7}, Shape{7, 8}, Shape{1, 4}, Shape{255, 256}}) {
    CAPTURE(sh.n, sh.chunks);
    Setup s(sh.n, 5);
    const auto r = ch02::verify_pipeline(
        s.problem, [&] { ch02::run_staged(s.problem, streams.s, sh.chunks, ch02::IssueOrder::Breadth); });
    INFO(r.describe() << " (the last chunk is shorter: step 3)");
    CHECK(r.ok);
  }
}

TEST_CASE("step 3: every element is copied in and out exactly once, and after_chunk runs once per chunk", "[ch02][step3][mechanism]") {
  cml::test::device();
  CML_REQUIRE_TRACING();
  const std::size_t n = 1000003, chunks = 7;
  Setup s(n, 5);
  Streams streams(3);
  std::vector<std::size_t> calls;
  s.problem.after_chunk = [&](std::size_t c, cudaStream_t) { calls.push_back(c); };
  cml::trace::Recorder recorder;
  ch02::run_staged(s.problem, streams.s, chunks, ch02::IssueOrder::Depth);
  const auto t = recorder.stop();
  CML_REQUIRE_TRACE_OK(t);
  std::uint64_t in = 0, out = 0;
  for (const auto& c : t.copies_of(CopyKind::HtoD)) in += c.bytes;
  for (const auto& c : t.copies_of(CopyKind::DtoH)) out += c.bytes;
  INFO("bytes copied in " << in << ", out " << out << ", want " << n * sizeof(int) << " each (step 3)");
  CHECK(in == n * sizeof(int));
  CHECK(out == n * sizeof(int));
  std::sort(calls.begin(), calls.end());
  std::vector<std::size_t> want(chunks);
  for (std::size_t c = 0; c < chunks; ++c) want[c] = c;
  INFO("after_chunk was called " << calls.size() << " times; call p.after_chunk(c, stream) once per chunk (step 3)");
  CHECK(calls == want);
}

// ---- Step 4 ------------------------------------------------------------------------------

TEST_CASE("step 4: your plan makes the staged pipeline at least 1.5x faster than sequential", "[ch02][step4][perf]") {
  const auto& dev = cml::test::device();
  if (dev.async_engine_count < 2)
    CML_SKIP("this GPU has " + std::to_string(dev.async_engine_count) + " copy engine(s); the 1.5x target needs 2");
  std::size_t n = std::size_t{64} << 20;  // 256 MiB each way, as in the chapter's figures
  while (4 * n * sizeof(int) + (std::size_t{512} << 20) > dev.free_bytes && n > (std::size_t{1} << 20)) n /= 2;
  const ch02::Plan plan = ch02::choose_plan(n, dev.async_engine_count);
  {
    INFO("choose_plan returned " << plan.streams << " stream(s) and " << plan.chunks << " chunk(s): with one of "
         "either nothing overlaps (step 4)");
    REQUIRE(plan.streams >= 2);
    REQUIRE(plan.chunks >= 2);
  }
  Setup s(n, 0);
  s.problem.cycles = balanced_cycles(s);
  Streams streams(plan.streams);
  cml::Stream stream;
  const auto st = cml::time_interleaved({[&](cudaStream_t x) { ch02::run_sequential(s.problem, x); },
                                         [&](cudaStream_t) { ch02::run_staged(s.problem, streams.s, plan.chunks, plan.order); }},
                                        stream, {2, 7}, cml::Clock::Host);
  const double speedup = st[0].median_ms / st[1].median_ms;
  INFO("at cycles " << s.problem.cycles << " (kernel about as long as a copy): sequential " << cml::with_noise(st[0])
       << ", staged " << cml::with_noise(st[1]) << " with " << plan.streams << " streams, " << plan.chunks
       << " chunks; sequential / staged " << cml::ratio_text(st[0], st[1])
       << "; want at least 1.5 (step 4: more chunks shorten the fill and drain)");
  CHECK(speedup >= 1.5);
  const auto r = ch02::verify_pipeline(s.problem, [&] { ch02::run_staged(s.problem, streams.s, plan.chunks, plan.order); });
  INFO(r.describe());
  CHECK(r.ok);
}
