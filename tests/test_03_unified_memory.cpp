// Chapter 03 — unified memory with streams: the tests of exercise.cu, step by step. The
// race of step 1 is made certain, not lucky: the test's kernel waits 20 ms on the GPU's
// clock before writing, so a host that does not wait always sees the old values. The
// calls the learner makes (attach, host functions, prefetch, advice) come from CUPTI's
// callback API; where the data moved and why, from its unified-memory records.
//
//   ./lab check 03                                 against your exercise.cu
//   meson test -C build "ch03 solution"            against the solution
#include "gpu.hpp"
#include "harness.hpp"
#include "unified.cuh"

#include "cml/api_trace.hpp"
#include "cml/buffers.hpp"
#include "cml/cli.hpp"
#include "cml/timing.hpp"
#include "cml/trace.hpp"
#include "cml/verify.hpp"

#include <memory>
#include <string>
#include <vector>

namespace {

// A table of its own and one lane over a managed buffer first touched on the CPU.
struct Fixture {
  Fixture(std::size_t n, std::size_t table_n, unsigned seed)
      : table(ch03::random_table(table_n, seed)), owner(n, table, cml::test::device().index, seed + 1),
        data(owner.data), initial(owner.initial), signal(owner.signal), lane(owner.lane) {}
  std::vector<unsigned> after_rounds(int rounds) const { return owner.after_rounds(rounds); }
  cml::ManagedBuffer<unsigned> table;
  ch03::LaneOwner owner;
  cml::ManagedBuffer<unsigned>& data;
  const std::vector<unsigned>& initial;
  ch03::RoundSignal& signal;
  ch03::Lane& lane;
};

void require_managed() {
  const auto& d = cml::test::device();
  if (!d.managed_memory) CML_SKIP("this device has no managed memory");
}

#define CML_REQUIRE_API_OK(calls) \
  do { if (!(calls).ok) FAIL("CUPTI's callback API failed, so the calls cannot be checked: " << (calls).error); } while (0)

}  // namespace

// ---- Step 1 ------------------------------------------------------------------------------

TEST_CASE("step 1: the host sees the kernel's result, even when the kernel is slow", "[ch03][step1][correctness]") {
  require_managed();
  Fixture f((1u << 20) + 3, 1000 + 7, 1);
  ch03::launch_slow_gpu_step(f.lane, 0, 20.0);  // writes nothing for 20 ms
  ch03::notify_when_done(f.lane, f.signal);
  ch03::wait_for_gpu(f.lane, f.signal, 0);
  std::vector<unsigned> want = f.initial;
  for (std::size_t i = 0; i < want.size(); ++i) want[i] = want[i] * 5u + f.table[i % f.table.size()];
  const auto r = cml::compare_exact(f.data.data(), want.data(), want.size());
  CUDA_CHECK(cudaDeviceSynchronize());
  INFO(r.describe() << ": the host read the buffer while the kernel was still running (it waits 20 ms before "
       "writing). wait_for_gpu must return only when the stream's work is done (step 1; ./lab hint 03)");
  CHECK(r.ok);
}

TEST_CASE("step 1: several threads' rounds give the right result", "[ch03][step1][correctness]") {
  require_managed();
  std::vector<std::unique_ptr<Fixture>> lanes;
  for (const std::size_t n : {std::size_t{100003}, std::size_t{4096}, std::size_t{777}})
    lanes.push_back(std::make_unique<Fixture>(n, 1009, static_cast<unsigned>(n)));
  const auto failures = ch03::on_threads(static_cast<int>(lanes.size()), cml::test::device().index, [&](int t) {
    ch03::run_lane(lanes[static_cast<std::size_t>(t)]->lane, 3, lanes[static_cast<std::size_t>(t)]->signal);
  });
  CUDA_CHECK(cudaDeviceSynchronize());
  for (std::size_t t = 0; t < lanes.size(); ++t) {
    CAPTURE(t);
    const std::string error = ch03::message(failures[t]);
    INFO(error);
    REQUIRE(error.empty());
    const auto want = lanes[t]->after_rounds(3);
    const auto r = cml::compare_exact(lanes[t]->data.data(), want.data(), want.size());
    INFO(r.describe() << " (a host step ran before its kernel finished: step 1)");
    CHECK(r.ok);
  }
}

// ---- Step 2 ------------------------------------------------------------------------------

TEST_CASE("step 2: each buffer is attached to its own stream alone", "[ch03][step2][mechanism]") {
  require_managed();
  CML_REQUIRE_TRACING();
  Fixture f(65536 + 5, 1009, 2);
  cml::api::Recorder recorder;
  ch03::run_lane(f.lane, 2, f.signal);
  const auto calls = recorder.stop();
  CUDA_CHECK(cudaDeviceSynchronize());
  CML_REQUIRE_API_OK(calls);
  const auto attach = calls.named("cudaStreamAttachMemAsync");
  INFO("attach made " << attach.size() << " cudaStreamAttachMemAsync call(s); want one: "
       "cudaStreamAttachMemAsync(lane.stream, lane.data, 0, cudaMemAttachSingle) (step 2; ./lab hint 03)");
  REQUIRE(attach.size() == 1);
  CHECK(attach[0].ptr == f.lane.data);
  INFO("the buffer was attached to another stream than lane.stream");
  CHECK(attach[0].stream == f.lane.stream);
  INFO("the attach flag was " << attach[0].flags << "; want cudaMemAttachSingle (" << cudaMemAttachSingle
       << "): only this stream's kernels use the buffer");
  CHECK(attach[0].flags == cudaMemAttachSingle);
}

// ---- Step 3 ------------------------------------------------------------------------------

TEST_CASE("step 3: a host function signals each round, in order, and nothing blocks on the stream", "[ch03][step3][mechanism]") {
  require_managed();
  CML_REQUIRE_TRACING();
  Fixture f(65536 + 5, 1009, 3);
  const int rounds = 4;
  cml::api::Recorder recorder;
  ch03::run_lane(f.lane, rounds, f.signal);
  const auto calls = recorder.stop();
  CUDA_CHECK(cudaDeviceSynchronize());
  CML_REQUIRE_API_OK(calls);
  const auto host_funcs = calls.named("cudaLaunchHostFunc");
  {
    INFO(host_funcs.size() << " cudaLaunchHostFunc call(s) for " << rounds << " rounds: enqueue "
         "RoundSignal::on_gpu_done on lane.stream in notify_when_done (step 3; ./lab hint 03)");
    REQUIRE(host_funcs.size() == static_cast<std::size_t>(rounds));
  }
  for (const auto& c : host_funcs) CHECK(c.stream == f.lane.stream);
  CHECK(f.signal.done() == rounds);
  std::size_t blocking = 0;
  for (const char* name : {"cudaStreamSynchronize", "cudaDeviceSynchronize", "cudaEventSynchronize"})
    blocking += calls.named(name).size();
  INFO(blocking << " blocking synchronisation call(s) in the rounds: wait with signal.wait_for(round) instead "
       "(step 3)");
  CHECK(blocking == 0);
  const auto want = f.after_rounds(rounds);
  CHECK(cml::compare_exact(f.data.data(), want.data(), want.size()).ok);
}

// ---- Step 4 ------------------------------------------------------------------------------

TEST_CASE("step 4: data moves by prefetch both ways, and the shared table is read-mostly", "[ch03][step4][mechanism]") {
  require_managed();
  CML_REQUIRE_TRACING();
  Fixture f((16u << 20) + 1024, 1 << 16, 4);  // 64 MiB of data
  cml::api::Recorder api;
  cml::trace::Recorder recorder(ch03::with_migrations());
  ch03::run_lane(f.lane, 2, f.signal);
  const auto t = recorder.stop();
  const auto calls = api.stop();
  CML_REQUIRE_TRACE_OK(t);
  CML_REQUIRE_API_OK(calls);
  const ch03::Migration m = ch03::migrated(t);
  {
    INFO("device-to-host migrations: " << m.dtoh << " bytes, " << m.dtoh_user << " of them prefetched: prefetch "
         "the data to the host (cudaMemLocationTypeHost) after the kernel, before the host step (step 4; ./lab hint 03)");
    REQUIRE(m.dtoh > 0);
    CHECK(static_cast<double>(m.dtoh_user) >= 0.9 * static_cast<double>(m.dtoh));
  }
  {
    INFO("host-to-device migrations: " << m.htod << " bytes, " << m.htod_user << " of them prefetched: the data "
         "reached the GPU by page faults; prefetch it with cudaMemPrefetchAsync to the device, on lane.stream, "
         "before the kernel (step 4)");
    REQUIRE(m.htod > 0);
    CHECK(static_cast<double>(m.htod_user) >= 0.9 * static_cast<double>(m.htod));
  }
  bool read_mostly = false;
  for (const auto& c : calls.named("cudaMemAdvise"))
    read_mostly = read_mostly || (c.ptr == f.lane.table && c.advice == cudaMemAdviseSetReadMostly);
  INFO("the table is read by every kernel and the host and written by nobody: advise it "
       "cudaMemAdviseSetReadMostly (step 4)");
  CHECK(read_mostly);
  const auto want = f.after_rounds(2);
  CHECK(cml::compare_exact(f.data.data(), want.data(), want.size()).ok);
}

TEST_CASE("step 4: prefetching to the GPU reaches at least 0.8 of an explicit copy from pinned memory", "[ch03][step4][perf]") {
  require_managed();
  const auto& dev = cml::test::device();
  std::size_t n = std::size_t{64} << 20;  // 256 MiB
  while (3 * n * sizeof(unsigned) + (std::size_t{512} << 20) > dev.free_bytes && n > (std::size_t{1} << 20)) n /= 2;
  Fixture f(n, 1009, 5);
  const ch03::PinnedCopy copy(f.owner);
  const cml::Work to_host = [&](cudaStream_t s) { ch03::move_pages(f.lane, ch03::host_location(), s); };
  to_host(f.lane.stream);
  CUDA_CHECK(cudaDeviceSynchronize());
  if (!cml::trace::disabled_by_environment()) {
    // A prefetch that moves nothing would look infinitely fast: first make sure it moves.
    cml::trace::Recorder recorder(ch03::with_migrations());
    ch03::prefetch_to_gpu(f.lane);
    const auto t = recorder.stop();
    CML_REQUIRE_TRACE_OK(t);
    INFO("prefetch_to_gpu moved " << ch03::migrated(t).htod_user << " of " << n * sizeof(unsigned)
         << " bytes to the GPU (step 4)");
    REQUIRE(ch03::migrated(t).htod_user >= n * sizeof(unsigned) * 9 / 10);
  }
  const auto st = cml::time_interleaved(
      {to_host, {}},
      {[&](cudaStream_t) { ch03::prefetch_to_gpu(f.lane); }, [&](cudaStream_t s) { copy.to_gpu(s); }},
      f.lane.stream, {1, 7}, cml::Clock::Events);
  const double ratio = st[1].median_ms / st[0].median_ms;
  INFO(cml::format_bytes(n * sizeof(unsigned)) << " to the GPU: prefetch " << cml::with_noise(st[0]) << " ("
       << cml::gbps(n * sizeof(unsigned), st[0].median_ms) << " GB/s), explicit copy from pinned "
       << cml::with_noise(st[1]) << ": the prefetch's speed as a fraction of the copy's (the copy's "
       "time over the prefetch's) is " << cml::ratio_text(st[1], st[0]) << "; want at least 0.8 (step 4)");
  CHECK(ratio >= 0.8);
}
