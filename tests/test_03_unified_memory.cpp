// Chapter 03 — unified memory with streams: the tests of exercise.cu, step by step. The
// learner writes run_lane; the chapter's own launch_gpu_step and host_step report what
// happened (ch03::Progress): the GPU itself marks when each round's kernel finished, so a
// host step that starts before that is seen whatever the data holds, and the kernels wait
// a random time, so no fixed pause of the host passes. The calls the learner makes come
// from CUPTI's callback API; where the data moved and why, from its unified-memory records.
//
//   ./lab check 03                                 against your exercise.cu
//   meson test -C build "ch03 solution"            against the solution
//   build/tests/test_ch03_solution "[.measure]"    both sides of the bars, five runs
#include "test_03_unified_memory.hpp"

namespace {

// What each bar assumes of the hardware, and what a smaller GPU changes: docs/every-gpu.md.
// ---- Bars ----------------------------------------------------------------------------------
// Each bar sits mid-gap between the solution and the fastest taught mistake it is there to
// catch (the geometric middle where the sides are far apart), five runs of each side with
// build/tests/test_ch03_solution "[.measure]": the measurements are in
// docs/03_unified_memory.md, "Speed bars: the measurements behind them".
// How much longer than its kernels' own waits a round may take (host step, prefetches,
// launch and wake-up included): a fixed pause just over the longest kernel fails it.
// Sleep-and-poll loops come in under it: the switches bar catches those.
constexpr double kLateMsPerRound = 8.0;
// The lane thread's CPU time over its wall time while the rounds' kernels wait: a thread
// that spins on cudaStreamQuery is busy all the time.
constexpr double kMaxBusyFraction = 0.45;
// Voluntary context switches of the lane thread per round: a thread that naps and polls
// wakes many times a round, the solution's 3.0-3.1 times.
constexpr double kMaxSwitchesPerRound = 7.0;
// Prefetch to the GPU over an explicit copy from pinned memory, speed (the copy's time over
// the prefetch's): the taught mistake, a prefetch in pieces, is far slower than the copy.
constexpr double kPrefetchOverCopy = 0.6;
// Each kernel of the race tests waits 0.25 to 1 x this before writing.
constexpr double kMaxDelayMs = 100.0;

void check_rounds(const Fixture& f, const LaneRun& run, int rounds, bool race, const cml::api::Calls* calls = nullptr) {
  {
    INFO("run_lane threw: " << run.error << never_signalled_advice(run.error, f.lane, f.signal, calls));
    REQUIRE(run.error.empty());
  }
  const ch03::Progress& p = f.progress;
  {
    INFO("run_lane launched "
         << p.launches << " GPU step(s) for " << rounds
         << " rounds: each round is "
            "launch_gpu_step(lane, r) then host_step(lane, r), on the lane's thread (step 1; ./lab hint 03)");
    REQUIRE(p.launches == rounds);
  }
  std::vector<int> in_order;
  for (int r = 0; r < rounds; ++r) in_order.push_back(r);
  {
    INFO("host_step ran for rounds "
         << rounds_text(p.host_steps) << "; want " << rounds_text(in_order)
         << ": one host step per round, in round order, after that round's GPU step (step 1)");
    REQUIRE(p.host_steps == in_order);
  }
  {
    INFO("the host step of round(s) "
         << rounds_text(p.early_steps)
         << " began while that round's kernel was "
            "still running"
         << (race ? " (each kernel waits " + cml::fixed(p.max_delay_ms / 4, 1) + " to " +
                        cml::fixed(p.max_delay_ms, 1) + " ms, at random, before writing)"
                  : std::string())
         << ": a host that does not wait for the GPU races with it and may see old, new or mixed values. The host "
            "may touch lane.data only once the lane's stream is done with it (step 1; ./lab hint 03)");
    REQUIRE(p.early_steps.empty());
  }
  // Not under compute-sanitizer (the sanitizer setups): its slowdown is no learner's pause.
  if (race && cml::test::whole_run_sanitizer().empty()) {
    const double extra = run.wall_ms - p.delays_ms;
    INFO("the rounds took " << cml::fixed(run.wall_ms, 1) << " ms, their kernels' waits " << cml::fixed(p.delays_ms, 1)
                            << " ms: " << cml::fixed(extra / rounds, 1)
                            << " ms per round more than the GPU needed; want at most " << kLateMsPerRound
                            << ". A fixed pause is not a wait for the GPU: wait for the lane's stream (step 1)");
    CHECK(extra <= kLateMsPerRound * rounds);
  }
  const auto want = f.after_rounds(rounds);
  const auto r = cml::compare_exact(f.data.data(), want.data(), want.size());
  INFO(r.describe() << " after " << rounds << " rounds (step 1)");
  CHECK(r.ok);
}

}  // namespace

// ---- Step 1 ------------------------------------------------------------------------------

CML_INTEGRITY_CASE(03, "03_unified_memory")

TEST_CASE("step 1: the host never touches the data while its kernel runs, however long the kernel takes",
          "[ch03][step1][correctness]") {
  Fixture f(jitter((1u << 20) + 3), 1000 + 7, 1);
  f.progress.max_delay_ms = kMaxDelayMs;
  const int rounds = 8;
  // The calls, where tracing is on: what a wait that never returns was waiting for.
  std::unique_ptr<cml::api::Recorder> recorder;
  if (!cml::trace::disabled_by_environment()) recorder = std::make_unique<cml::api::Recorder>();
  const LaneRun run = run_on_thread(f.lane, rounds, f.signal);
  const cml::api::Calls calls = recorder ? recorder->stop() : cml::api::Calls{};
  CUDA_CHECK(cudaDeviceSynchronize());
  check_rounds(f, run, rounds, true, &calls);
}

TEST_CASE("step 1: several threads' rounds give the right result, each lane waiting for its own stream",
          "[ch03][step1][correctness]") {
  std::vector<std::unique_ptr<Fixture>> lanes;
  for (const std::size_t n : {jitter(100003), jitter(4096), jitter(777)})
    lanes.push_back(std::make_unique<Fixture>(n, 1009, static_cast<unsigned>(n)));
  const bool traced = !cml::trace::disabled_by_environment();
  std::unique_ptr<cml::api::Recorder> recorder;
  if (traced) recorder = std::make_unique<cml::api::Recorder>();
  const int rounds = 3;
  const auto failures = ch03::on_threads(static_cast<int>(lanes.size()), cml::test::device().index, [&](int t) {
    ch03::run_lane(lanes[static_cast<std::size_t>(t)]->lane, rounds, lanes[static_cast<std::size_t>(t)]->signal);
  });
  const cml::api::Calls calls = traced ? recorder->stop() : cml::api::Calls{};
  CUDA_CHECK(cudaDeviceSynchronize());
  for (std::size_t t = 0; t < lanes.size(); ++t) {
    CAPTURE(t);
    check_rounds(*lanes[t], LaneRun{ch03::message(failures[t]), 0, 0, 0}, rounds, false, &calls);
  }
  if (calls.ok) {
    const int device_waits = cml::test::count_calls(calls, "cudaDeviceSynchronize");
    INFO("run_lane called cudaDeviceSynchronize "
         << device_waits
         << " time(s): it waits for every lane's stream, "
            "so each thread waits for all the others' kernels. Wait for this lane's stream only (step 1)");
    CHECK(device_waits == 0);
  }
}

// ---- Step 2 ------------------------------------------------------------------------------

TEST_CASE("step 2: each buffer is attached to its own stream alone, before its first kernel",
          "[ch03][step2][mechanism]") {
  CML_REQUIRE_TRACING();
  Fixture f(jitter(65536 + 5), 1009, 2);
  cml::api::Recorder recorder;
  ch03::run_lane(f.lane, 2, f.signal);
  const auto calls = recorder.stop();
  CUDA_CHECK(cudaDeviceSynchronize());
  CML_REQUIRE_API_OK(calls);
  std::vector<cml::api::Call> attach;
  for (const auto& c : calls.named("cudaStreamAttachMemAsync"))
    if (c.ptr == f.lane.data) attach.push_back(c);
  {
    INFO("run_lane attached lane.data "
         << attach.size()
         << " time(s) in 2 rounds; want once, before the lane's "
            "first kernel: tell the driver which stream's work uses lane.data (step 2; ./lab hint 03)");
    REQUIRE(attach.size() == 1);
  }
  {
    INFO("lane.data was attached to stream "
         << attach[0].stream << ", not to lane.stream (" << f.lane.stream
         << "): attached to another stream, the buffer is that stream's business (step 2)");
    CHECK(attach[0].stream == f.lane.stream);
  }
  {
    INFO("the attach flag was "
         << attach[0].flags << "; want cudaMemAttachSingle (" << cudaMemAttachSingle
         << "): only this stream's work uses the buffer (cudaMemAttachGlobal: every stream's; cudaMemAttachHost: "
            "none) (step 2)");
    CHECK(attach[0].flags == cudaMemAttachSingle);
  }
  {
    INFO("the attach covered " << attach[0].bytes << " bytes; want 0 or the whole allocation ("
                               << f.lane.n * sizeof(unsigned)
                               << "): a managed allocation is attached as a whole (step 2)");
    CHECK((attach[0].bytes == 0 || attach[0].bytes == f.lane.n * sizeof(unsigned)));
  }
  {
    std::size_t table_attaches = 0;
    for (const auto& c : calls.named("cudaStreamAttachMemAsync")) table_attaches += c.ptr == f.lane.table;
    INFO("run_lane attached the shared table (lane.table) "
         << table_attaches
         << " time(s): every lane's kernels and the host read it, so it stays attached to every stream, as "
            "allocated. Attached to one lane's stream (the last lane to do it wins), the host may read it while "
            "another lane's kernel does, which a GPU without concurrentManagedAccess forbids. Attach lane.data "
            "only (step 2)");
    CHECK(table_attaches == 0);
  }
  bool before_kernel = false;
  for (const auto& c : calls.calls) {
    if (c.name == "cudaStreamAttachMemAsync" && c.ptr == f.lane.data) {
      before_kernel = true;
      break;
    }
    if (c.name.rfind("cudaLaunchKernel", 0) == 0) break;
  }
  INFO(
      "lane.data was attached after the lane's first kernel was launched: that kernel ran with the buffer "
      "attached to every stream. Attach before the first round (step 2)");
  CHECK(before_kernel);
}

// The activity trace says where the GPU work ran; the callback trace, which stream each
// enqueueing call that takes one was given (the prefetches and host functions leave no
// activity record with a stream).
TEST_CASE(
    "step 2: run_lane enqueues its kernels, copies, memsets, prefetches and host functions on lane.stream, and nothing "
    "elsewhere",
    "[ch03][step2][mechanism]") {
  CML_REQUIRE_TRACING();
  Fixture f(jitter(65536 + 5), 1009, 9);
  const int rounds = 3;
  CUDA_CHECK(cudaDeviceSynchronize());
  cml::api::Recorder api;
  cml::trace::Recorder recorder;
  ch03::run_lane(f.lane, rounds, f.signal);
  const auto t = recorder.stop();
  const auto calls = api.stop();
  CML_REQUIRE_TRACE_OK(t);
  CML_REQUIRE_API_OK(calls);
  {
    INFO(
        "the trace shows " << t.kernels_named("gpu_step").size() << " GPU step(s) for " << rounds
                           << " rounds: "
                              "each round is launch_gpu_step(lane, r) then host_step(lane, r) (step 1; ./lab hint 03)");
    REQUIRE(t.kernels_named("gpu_step").size() == static_cast<std::size_t>(rounds));
  }
  {
    const std::string elsewhere = cml::test::work_elsewhere(t, f.lane.stream);
    INFO("run_lane: "
         << elsewhere
         << ", not lane.stream: lane.data is the business of lane.stream alone, and "
            "work elsewhere is not ordered with the lane's kernels, moves and host function, which tell the thread "
            "when it may touch the data (step 2; ./lab hint 03)");
    CHECK(elsewhere.empty());
  }
  std::string wrong;
  for (const auto& c : calls.calls) {
    const std::string name = cml::test::base_name(c.name);
    if ((name == "cudaStreamAttachMemAsync" || name == "cudaMemPrefetchAsync" || name == "cudaLaunchHostFunc") &&
        c.stream != f.lane.stream && wrong.empty()) {
      std::ostringstream o;
      o << name << " on stream " << c.stream << (c.stream == nullptr ? " (the legacy default stream)" : "");
      wrong = o.str();
    }
  }
  INFO("run_lane called " << wrong << ", not on lane.stream (" << f.lane.stream
                          << "): what it enqueues for the "
                             "lane goes on the lane's stream, in the lane's order (step 2)");
  CHECK(wrong.empty());
}

TEST_CASE("step 2: with several lanes in one process, each lane attaches its own buffer to its own stream",
          "[ch03][step2][mechanism]") {
  CML_REQUIRE_TRACING();
  // Two batches of lanes, one after the other. A flag kept per process (a function-static,
  // std::call_once) is set by the first batch, so the second batch shows it even where all
  // of the first batch's threads raced past an unguarded flag before any of them set it.
  ManyLanes batches[2] = {ManyLanes(20), ManyLanes(21)};
  const int rounds = 2;
  std::vector<std::string> errors[2];
  std::vector<std::vector<cml::api::Call>> attaches[2];
  for (int b = 0; b < 2; ++b) {
    const auto calls = batches[b].run_recorded(rounds, errors[b]);
    CML_REQUIRE_API_OK(calls);
    attaches[b].resize(batches[b].lanes.size());
    for (std::size_t t = 0; t < batches[b].lanes.size(); ++t)
      for (const auto& c : calls.calls)
        if (cml::test::base_name(c.name) == "cudaStreamAttachMemAsync" && c.ptr == batches[b].lanes[t]->lane.data)
          attaches[b][t].push_back(c);
  }
  bool some = false;
  for (const auto& batch : attaches)
    some = some || std::any_of(batch.begin(), batch.end(), [](const auto& a) { return !a.empty(); });
  for (int b = 0; b < 2; ++b) {
    const ManyLanes& m = batches[b];
    for (std::size_t t = 0; t < m.lanes.size(); ++t) {
      const ch03::Lane& lane = m.lanes[t]->lane;
      const std::vector<cml::api::Call>& attach = attaches[b][t];
      {
        INFO("batch " << b + 1 << " of 2, " << m.describe(t) << ": its buffer was attached " << attach.size()
                      << " time(s) in " << rounds << " rounds, with " << m.lanes.size()
                      << " lanes running at once; want once per lane. "
                      << (some ? "An attach done once per process (a function-static flag, std::call_once) "
                                 "covers the first lanes' buffers only: every lane's buffer is its own "
                                 "stream's business"
                               : "Tell the driver which stream's work uses lane.data")
                      << " (step 2; ./lab hint 03)");
        CHECK(attach.size() == 1);
      }
      for (const auto& a : attach) {
        INFO(m.describe(t) << ": its buffer was attached to " << m.owner(a.stream)
                           << "'s stream, not its own: a "
                              "stream kept from an earlier call is another lane's (step 2)");
        CHECK(a.stream == lane.stream);
      }
    }
    m.check_results(errors[b], rounds, "step 2");
  }
}

// ---- Step 3 ------------------------------------------------------------------------------

TEST_CASE("step 3: a host function on the lane's stream signals each round, in order, and nothing blocks",
          "[ch03][step3][mechanism]") {
  CML_REQUIRE_TRACING();
  Fixture f(jitter(65536 + 5), 1009, 3);
  f.progress.max_delay_ms = kMaxDelayMs / 2;
  const int rounds = 6;
  const auto [run, calls] = recorded_run(f, rounds);
  std::vector<cml::api::Call> host_funcs;
  for (const auto& c : calls.calls)
    if (cml::test::base_name(c.name) == "cudaLaunchHostFunc") host_funcs.push_back(c);
  {
    INFO(host_funcs.size()
         << " cudaLaunchHostFunc call(s) for " << rounds
         << " rounds: the thread must learn from "
            "the lane's stream that each round is done, through a host function that signals `signal` (step 3; "
            "./lab hint 03)");
    REQUIRE(host_funcs.size() == static_cast<std::size_t>(rounds));
  }
  std::size_t elsewhere = 0;
  for (const auto& c : host_funcs) elsewhere += c.stream != f.lane.stream;
  {
    INFO(elsewhere << " of the " << rounds
                   << " host functions were enqueued on another stream than lane.stream: "
                      "there they do not wait for the lane's kernel, and signal too early (step 3)");
    REQUIRE(elsewhere == 0);
  }
  {
    const auto off = host_steps_off_thread(calls);
    INFO("the host step of round(s) "
         << rounds_text(off)
         << " ran on another thread than the one run_lane was called on: the host function did the host step "
            "itself, on the driver's thread, where host functions of independent streams may be serialized (the "
            "runtime API's words) — one lane's host step may hold up every other lane's signal. Let the host "
            "function only signal; call host_step(lane, r) on this thread once signal.wait_for(r) returns (step 3; "
            "./lab hint 03)");
    REQUIRE(off.empty());
  }
  {
    // Stream order: round r's host function runs after what was enqueued before it, so it
    // must come after round r's kernel, or it lets the host step begin while the kernel runs.
    const auto order = enqueued_for(calls, f.lane);
    int kernels = 0, early = -1, funcs = 0;
    for (const auto& e : order) {
      if (e.what == 'K') ++kernels;
      if (e.what != 'H') continue;
      if (early < 0 && kernels <= funcs) early = funcs;
      ++funcs;
    }
    INFO("round "
         << early
         << "'s host function was enqueued on lane.stream before that round's kernel: it runs "
            "once the work before it is done — not the kernel, which comes after it — and lets the host step begin "
            "while the kernel runs. Enqueue it after launch_gpu_step (and the move back), then wait (step 3; ./lab "
            "hint 03)");
    REQUIRE(early < 0);
  }
  {
    INFO("the signal counted " << f.signal.done() << " rounds of " << rounds << " (step 3)");
    REQUIRE(f.signal.done() == rounds);
  }
  {
    const std::string blocking = cml::test::blocking_calls(calls);
    INFO("run_lane made blocking or polling CUDA calls: "
         << blocking
         << ". Once the host function signals, "
            "signal.wait_for(r) returns: no other wait is needed, and polling keeps a core busy (step 3)");
    REQUIRE(blocking.empty());
  }
  {
    INFO("the lane's thread used "
         << cml::fixed(run.cpu_ms, 1) << " ms of CPU in " << cml::fixed(run.wall_ms, 1)
         << " ms while its kernels waited: it spins instead of sleeping until the signal; want at most "
         << kMaxBusyFraction << " of the time. Wait with signal.wait_for(r) (step 3)");
    CHECK(run.cpu_ms <= kMaxBusyFraction * run.wall_ms);
  }
  {
    INFO("the lane's thread woke " << run.switches << " times in " << rounds << " rounds; want at most "
                                   << kMaxSwitchesPerRound
                                   << " per round: it sleeps and looks again instead of waiting for the signal "
                                      "(step 3)");
    CHECK(static_cast<double>(run.switches) <= kMaxSwitchesPerRound * rounds);
  }
  check_rounds(f, run, rounds, true, &calls);
}

TEST_CASE(
    "step 3: with several lanes in one process, each lane's host functions go on its own stream and signal its own "
    "RoundSignal",
    "[ch03][step3][mechanism]") {
  CML_REQUIRE_TRACING();
  ManyLanes m(30);
  const int rounds = 3;
  std::vector<std::string> errors;
  const auto calls = m.run_recorded(rounds, errors);
  CML_REQUIRE_API_OK(calls);
  std::vector<std::size_t> made(m.lanes.size(), 0);
  for (const auto& [t, call] : m.lane_calls(calls, "cudaLaunchHostFunc")) {
    const cml::api::Call& c = *call;
    ++made[t];
    {
      INFO(m.describe(t)
           << " enqueued a host function on " << m.owner(c.stream)
           << "'s stream: on another lane's "
              "stream it waits for the wrong kernel. Enqueue it on lane.stream, the stream of the lane you were given, "
              "not one kept from an earlier call (a function-static is the first lane's) (step 3; ./lab hint 03)");
      CHECK(c.stream == m.lanes[t]->lane.stream);
    }
    INFO(m.describe(t)
         << " enqueued a host function that signals " << m.owner(c.ptr)
         << "'s RoundSignal: its "
            "userData is the `signal` this run_lane was given, not one kept from an earlier call (a function-static is "
            "the first lane's) (step 3; ./lab hint 03)");
    CHECK(c.ptr == &m.lanes[t]->signal);
  }
  for (std::size_t t = 0; t < m.lanes.size(); ++t) {
    INFO(m.describe(t) << " enqueued " << made[t] << " host function(s) in " << rounds
                       << " rounds: one per round, "
                          "for every lane (step 3)");
    CHECK(made[t] == static_cast<std::size_t>(rounds));
  }
  m.check_results(errors, rounds, "step 3");
}

// ---- Step 4 ------------------------------------------------------------------------------

TEST_CASE("step 4: data moves by prefetch both ways on the lane's stream", "[ch03][step4][mechanism]") {
  CML_REQUIRE_TRACING();
  Fixture f(jitter((16u << 20) + 1024), jitter(1 << 16), 4);  // 64 MiB of data
  cml::api::Recorder api;
  cml::trace::Recorder recorder(ch03::with_migrations());
  ch03::run_lane(f.lane, 2, f.signal);
  const auto t = recorder.stop();
  const auto calls = api.stop();
  CML_REQUIRE_TRACE_OK(t);
  CML_REQUIRE_API_OK(calls);
  std::size_t prefetches = 0, elsewhere = 0;
  for (const auto& c : calls.named("cudaMemPrefetchAsync"))
    if (c.ptr == f.lane.data) {
      ++prefetches;
      elsewhere += c.stream != f.lane.stream;
    }
  {
    INFO(elsewhere << " of " << prefetches
                   << " prefetches of lane.data were enqueued on another stream than "
                      "lane.stream: there they are not ordered with the lane's kernel and host function (step 4)");
    CHECK(elsewhere == 0);
  }
  check_no_prefetch_under_host_step(calls, f.lane);  // what makes the host fault the pages back
  const ch03::Migration m = ch03::migrated(t);
  {
    INFO("host-to-device migrations: "
         << m.htod << " bytes, " << m.htod_user
         << " of them prefetched: the data "
            "reached the GPU by page faults; move it there before each kernel (step 4; ./lab hint 03)");
    REQUIRE(m.htod > 0);
    CHECK(static_cast<double>(m.htod_user) >= 0.9 * static_cast<double>(m.htod));
  }
  {
    INFO("device-to-host migrations: "
         << m.dtoh << " bytes, " << m.dtoh_user
         << " of them prefetched: the host "
            "step faulted the data back page by page; move it to the host after each kernel, before the host step "
            "(step 4)");
    REQUIRE(m.dtoh > 0);
    CHECK(static_cast<double>(m.dtoh_user) >= 0.9 * static_cast<double>(m.dtoh));
  }
  const auto want = f.after_rounds(2);
  const auto r = cml::compare_exact(f.data.data(), want.data(), want.size());
  INFO(r.describe() << " (step 4)");
  CHECK(r.ok);
}

// Stream order is the promise: round r's move to the GPU is enqueued before its kernel, and
// its move back before the host function that lets the host touch the data. Read from the
// calls' order, not from how the race came out.
TEST_CASE(
    "step 4: each round's moves are in stream order: to the GPU before the kernel, back to the host before the host "
    "function",
    "[ch03][step4][mechanism]") {
  CML_REQUIRE_TRACING();
  Fixture f(jitter((1u << 20) + 5), 1009, 9);
  const int rounds = 3;
  const auto [run, calls] = recorded_run(f, rounds);
  // What lane.stream runs, in order (moves enqueued on other streams are the other tests'
  // business: they are not ordered with this stream at all).
  std::string order;
  for (const auto& e : enqueued_for(calls, f.lane))
    if (e.stream == f.lane.stream) order += e.what;
  INFO("lane.stream ran, in order: " << order
                                     << " (G: a move of lane.data to the GPU, K: the round's kernel, C: a "
                                        "move back to the host, H: the host function that lets the host step begin)");
  check_no_prefetch_under_host_step(calls, f.lane);
  std::size_t start = 0;
  for (int r = 0; r < rounds; ++r) {
    CAPTURE(r);
    const std::size_t h = order.find('H', start);
    REQUIRE(h != std::string::npos);
    const std::string round = order.substr(start, h - start);  // this round's work before its host function
    const std::size_t k = round.find('K');
    REQUIRE(k != std::string::npos);
    {
      const bool late = round.find('G', k) != std::string::npos;
      INFO("round " << r
                    << (late ? "'s move to the GPU was enqueued after its kernel: the kernel ran on pages still "
                               "on the host, faulting them over, and the move came after it"
                             : " has no move to the GPU before its kernel")
                    << ": enqueue prefetch_to_gpu before launch_gpu_step, on lane.stream (step 4; ./lab hint 03)");
      CHECK(round.substr(0, k).find('G') != std::string::npos);
    }
    {
      const std::size_t next_kernel = order.find('K', h);
      const bool after =
          order.substr(h, next_kernel == std::string::npos ? std::string::npos : next_kernel - h).find('C') !=
          std::string::npos;
      INFO("round "
           << r
           << (after ? "'s move back to the host was enqueued after the host function that lets the "
                       "host touch lane.data: the data is still moving while the host step reads and "
                       "writes it, and the host's faults race the prefetch"
                     : " has no move back to the host between its kernel and its host function")
           << ": enqueue prefetch_to_cpu after the kernel and before the host function (step 4; ./lab hint 03)");
      CHECK(round.find('C', k) != std::string::npos);
    }
    start = h + 1;
  }
  const auto want = f.after_rounds(rounds);
  const auto r = cml::compare_exact(f.data.data(), want.data(), want.size());
  INFO(r.describe() << " (step 4)");
  CHECK(r.ok);
}

TEST_CASE("step 4: with several lanes in one process, each lane prefetches its own whole buffer on its own stream",
          "[ch03][step4][mechanism]") {
  CML_REQUIRE_TRACING();
  ManyLanes m(40);
  const int rounds = 2;
  std::vector<std::string> errors;
  const auto calls = m.run_recorded(rounds, errors);
  CML_REQUIRE_API_OK(calls);
  std::vector<std::size_t> to_gpu(m.lanes.size(), 0), to_host(m.lanes.size(), 0);
  for (const auto& [t, call] : m.lane_calls(calls, "cudaMemPrefetchAsync")) {
    const cml::api::Call& c = *call;
    const ch03::Lane& lane = m.lanes[t]->lane;
    (c.location.type == cudaMemLocationTypeDevice ? to_gpu : to_host)[t]++;
    {
      INFO(m.describe(t) << " prefetched " << m.owner(c.ptr)
                         << "'s buffer: move lane.data, the buffer of the lane "
                            "you were given, not one kept from an earlier call (step 4; ./lab hint 03)");
      CHECK(c.ptr == lane.data);
    }
    {
      INFO(m.describe(t)
           << " enqueued a prefetch on " << m.owner(c.stream)
           << "'s stream: a stream kept from an "
              "earlier call is another lane's, and orders the move with that lane's work, not this one's (step 4; "
              "./lab hint 03)");
      CHECK(c.stream == lane.stream);
    }
    INFO(m.describe(t) << " prefetched " << c.bytes << " bytes of its " << lane.n * sizeof(unsigned)
                       << ": the "
                          "length is this lane's, lane.n * sizeof(unsigned), not one kept from an earlier call (step "
                          "4; ./lab hint 03)");
    CHECK(c.bytes == lane.n * sizeof(unsigned));
  }
  for (std::size_t t = 0; t < m.lanes.size(); ++t) {
    INFO(m.describe(t) << " prefetched its buffer to the GPU " << to_gpu[t] << " time(s) and to the host " << to_host[t]
                       << " time(s) in " << rounds << " rounds: once each way per round, for every lane (step 4)");
    CHECK(to_gpu[t] == static_cast<std::size_t>(rounds));
    CHECK(to_host[t] == static_cast<std::size_t>(rounds));
  }
  m.check_results(errors, rounds, "step 4");
}

// The table's owner (this test, as the program's main) advises it once, then starts the
// lanes; the recording covers both, so advice made by the lanes is seen, and from which
// thread.
TEST_CASE("step 4: the shared table is advised read-mostly once, whole, by its owner and not by the lanes",
          "[ch03][step4][mechanism]") {
  CML_REQUIRE_TRACING();
  const int device = cml::test::device().index;
  const cml::ManagedBuffer<unsigned> table = ch03::random_table(jitter(1 << 16), 8);
  std::vector<std::unique_ptr<ch03::LaneOwner>> lanes;
  for (const std::size_t n : {jitter(65536 + 5), jitter(4096), jitter(777)})
    lanes.push_back(std::make_unique<ch03::LaneOwner>(n, table, device, static_cast<unsigned>(n)));
  const int rounds = 2;
  std::vector<std::exception_ptr> failures;
  const cml::test::Recorded rec = cml::test::record_calls([&] {
    ch03::advise_table(table.data(), table.size(), device);
    failures = ch03::on_threads(static_cast<int>(lanes.size()), device, [&](int t) {
      ch03::run_lane(lanes[static_cast<std::size_t>(t)]->lane, rounds, lanes[static_cast<std::size_t>(t)]->signal);
    });
  });
  CUDA_CHECK(cudaDeviceSynchronize());
  CML_REQUIRE_API_OK(rec.calls);
  {
    INFO("advise_table threw: " << rec.threw << " (step 4)");
    REQUIRE(rec.threw.empty());
  }
  for (std::size_t t = 0; t < lanes.size(); ++t) {
    INFO("lane " << t << ": run_lane threw: " << ch03::message(failures[t]));
    REQUIRE(failures[t] == nullptr);
  }
  std::vector<cml::api::Call> advice;
  for (const auto& c : rec.calls.named("cudaMemAdvise"))
    if (c.ptr == table.data() && c.advice == cudaMemAdviseSetReadMostly) advice.push_back(c);
  std::size_t by_lanes = 0;
  for (const auto& c : advice) by_lanes += c.thread != std::this_thread::get_id();
  {
    INFO(
        "the table is read by every kernel and the host and written by nobody: advise it for that, in "
        "advise_table (step 4; ./lab hint 03)");
    REQUIRE(!advice.empty());
  }
  {
    INFO("the table was advised read-mostly "
         << advice.size() << " time(s), " << by_lanes
         << " of them from the "
            "threads of the "
         << lanes.size()
         << " lanes; want once, by its owner: advice is a property of the memory, "
            "set once by advise_table where the table is made, not by each lane that uses it (step 4)");
    CHECK(by_lanes == 0);
    REQUIRE(advice.size() == 1);
  }
  {
    const std::size_t table_bytes = table.size() * sizeof(unsigned);
    INFO("the advice covered " << advice[0].bytes << " bytes of the table's " << table_bytes
                               << ": lengths are in bytes, and the advice is for the whole table (step 4)");
    CHECK(advice[0].bytes == table_bytes);
  }
  for (std::size_t t = 0; t < lanes.size(); ++t) {
    std::size_t read_mostly = 0;
    for (const auto& c : rec.calls.named("cudaMemAdvise"))
      read_mostly += c.ptr == lanes[t]->data.data() && c.advice == cudaMemAdviseSetReadMostly;
    INFO("lane " << t << "'s data was advised read-mostly " << read_mostly
                 << " time(s): the kernels and the host both write it, and every write to read-mostly memory "
                    "drops the other side's copy. Read-mostly is the table's advice; lane.data is moved by "
                    "prefetching (step 4)");
    CHECK(read_mostly == 0);
  }
  for (std::size_t t = 0; t < lanes.size(); ++t) {
    const auto want = lanes[t]->after_rounds(rounds);
    const auto r = cml::compare_exact(lanes[t]->data.data(), want.data(), want.size());
    INFO("lane " << t << ": " << r.describe() << " (step 4)");
    CHECK(r.ok);
  }
}

TEST_CASE("step 4: prefetch_to_gpu and prefetch_to_cpu only enqueue the whole buffer's move, on the lane's stream",
          "[ch03][step4][mechanism]") {
  CML_REQUIRE_TRACING();
  Fixture f(jitter((1u << 20) + 5), 1009, 6);
  CUDA_CHECK(cudaDeviceSynchronize());
  struct Way {
    const char* name;
    void (*fn)(const ch03::Lane&);
    cudaMemLocationType type;
  };
  for (const Way& way : {Way{"prefetch_to_gpu", ch03::prefetch_to_gpu, cudaMemLocationTypeDevice},
                         Way{"prefetch_to_cpu", ch03::prefetch_to_cpu, cudaMemLocationTypeHost}}) {
    CAPTURE(way.name);
    // The lane's stream is held shut while the call runs: a call that waits for it is seen.
    const cml::test::Enqueued e = cml::test::watch_enqueue({f.lane.stream}, [&] { way.fn(f.lane); });
    CML_REQUIRE_API_OK(e.calls);
    {
      const std::string err = e.error();
      INFO(way.name << " did not only enqueue: " << err
                    << ". It must only enqueue the move: the stream's order "
                       "already puts it before the kernel or the host function that follows (step 4)");
      REQUIRE(err.empty());
    }
    std::vector<cml::api::Call> moves;
    for (const auto& c : e.calls.named("cudaMemPrefetchAsync"))
      if (c.ptr == f.lane.data) moves.push_back(c);
    {
      INFO(way.name << " made " << moves.size()
                    << " prefetch(es) of lane.data; want one, of the whole buffer "
                       "(step 4; ./lab hint 03)");
      REQUIRE(moves.size() == 1);
    }
    {
      INFO(way.name << "'s prefetch was enqueued on another stream than lane.stream: it is then not ordered with "
                       "the lane's kernel and host function (step 4)");
      CHECK(moves[0].stream == f.lane.stream);
    }
    {
      INFO(way.name << "'s prefetch covered " << moves[0].bytes << " bytes of lane.data's "
                    << f.lane.n * sizeof(unsigned) << ": lengths are in bytes (step 4)");
      CHECK(moves[0].bytes == f.lane.n * sizeof(unsigned));
    }
    {
      INFO(way.name << "'s prefetch went to location type " << moves[0].location.type << " (id " << moves[0].location.id
                    << "); want " << way.type
                    << (way.type == cudaMemLocationTypeDevice ? " (cudaMemLocationTypeDevice) with id lane.device"
                                                              : " (cudaMemLocationTypeHost)")
                    << " (step 4)");
      CHECK(moves[0].location.type == way.type);
      if (way.type == cudaMemLocationTypeDevice) CHECK(moves[0].location.id == f.lane.device);
    }
  }
}

TEST_CASE("step 4: prefetching to the GPU reaches the speed of an explicit copy from pinned memory",
          "[ch03][step4][perf]") {
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
    CUDA_CHECK(cudaDeviceSynchronize());
    const auto t = recorder.stop();
    CML_REQUIRE_TRACE_OK(t);
    INFO("prefetch_to_gpu moved " << ch03::migrated(t).htod_user << " of " << n * sizeof(unsigned)
                                  << " bytes to the GPU by prefetch (step 4)");
    REQUIRE(ch03::migrated(t).htod_user >= n * sizeof(unsigned) * 9 / 10);
  }
  // The host's clock around the call and a device synchronise: whatever stream the learner
  // enqueued the prefetch on, its time is in.
  const auto st = cml::time_interleaved(
      {to_host, {}}, {[&](cudaStream_t) { ch03::prefetch_to_gpu(f.lane); }, [&](cudaStream_t s) { copy.to_gpu(s); }},
      f.lane.stream, {1, 7}, cml::Clock::Host);
  const double ratio = st[1].median_ms / st[0].median_ms;
  INFO(cml::format_bytes(n * sizeof(unsigned))
       << " to the GPU: prefetch " << cml::with_noise(st[0]) << " ("
       << cml::fixed(cml::gbps(n * sizeof(unsigned), st[0].median_ms), 1) << " GB/s), explicit copy from pinned "
       << cml::with_noise(st[1])
       << ": the prefetch's speed as a fraction of the copy's (the copy's time over the "
          "prefetch's) is "
       << cml::ratio_text(st[1], st[0]) << "; want at least " << kPrefetchOverCopy
       << ": move all of lane.data in one prefetch, not page by page (step 4)");
  CHECK(ratio >= kPrefetchOverCopy);
}

// ---- Both sides of the bars, for the maintainer: five runs each. Not run by ./lab check. ----
// The correct side is the build's run_lane and prefetch_to_gpu (the solution's, in
// test_ch03_solution); the mistakes are written here, host code around the chapter's
// provided kernel: the fastest of each kind the bars must reject.

namespace {

// A lane's rounds done wrong in one way: `wait` stands where the wait for the GPU belongs.
LaneRun run_rounds_with(const ch03::Lane& lane, int rounds, const std::function<void(int)>& wait) {
  LaneRun out;
  const auto errors = ch03::on_threads(1, cml::test::device().index, [&](int) {
    const long s0 = thread_switches();
    const double c0 = thread_cpu_ms();
    const auto t0 = std::chrono::steady_clock::now();
    for (int r = 0; r < rounds; ++r) {
      ch03::launch_gpu_step(lane, r);
      wait(r);
      ch03::host_step(lane, r);
    }
    out.wall_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    out.cpu_ms = thread_cpu_ms() - c0;
    out.switches = thread_switches() - s0;
  });
  out.error = ch03::message(errors[0]);
  return out;
}

void print_run(const char* what, const LaneRun& run, const ch03::Progress& p, int rounds) {
  std::printf(
      "  %-44s late %6.1f ms/round (bar %.1f)  busy %.3f (bar %.2f)  switches %5.1f/round (bar %.1f)  "
      "early %zu%s%s\n",
      what, (run.wall_ms - p.delays_ms) / rounds, kLateMsPerRound, run.cpu_ms / std::max(run.wall_ms, 1e-9),
      kMaxBusyFraction, static_cast<double>(run.switches) / rounds, kMaxSwitchesPerRound, p.early_steps.size(),
      run.error.empty() ? "" : "  error: ", run.error.c_str());
}

}  // namespace

TEST_CASE("step 1: measure both sides of the bars", "[ch03][step1][.measure]") {
  std::printf("device %s\n", cml::test::device().name.c_str());
  const int rounds = 8;
  using namespace std::chrono_literals;
  for (int run = 0; run < 5; ++run) {
    std::printf("run %d (kernels wait %.0f-%.0f ms at random)\n", run, kMaxDelayMs / 4, kMaxDelayMs);
    const auto measure = [&](const char* what,
                             const std::function<LaneRun(const ch03::Lane&, ch03::RoundSignal&)>& fn) {
      Fixture f(jitter((1u << 20) + 3), 1007, 10 + static_cast<unsigned>(run));
      f.progress.max_delay_ms = kMaxDelayMs;
      const LaneRun r = fn(f.lane, f.signal);
      CUDA_CHECK(cudaDeviceSynchronize());
      print_run(what, r, f.progress, rounds);
    };
    measure("run_lane (this build's)",
            [&](const ch03::Lane& l, ch03::RoundSignal& s) { return run_on_thread(l, rounds, s); });
    measure("mistake: a fixed pause just over the longest", [&](const ch03::Lane& l, ch03::RoundSignal&) {
      return run_rounds_with(l, rounds, [&](int) {
        std::this_thread::sleep_for(std::chrono::duration<double, std::milli>(kMaxDelayMs + 1));
      });
    });
    measure("mistake: spin on cudaStreamQuery", [&](const ch03::Lane& l, ch03::RoundSignal&) {
      return run_rounds_with(l, rounds, [&](int) {
        while (cudaStreamQuery(l.stream) == cudaErrorNotReady) {
        }
      });
    });
    measure("mistake: nap 1 ms and poll the stream", [&](const ch03::Lane& l, ch03::RoundSignal&) {
      return run_rounds_with(l, rounds, [&](int) {
        while (cudaStreamQuery(l.stream) == cudaErrorNotReady) std::this_thread::sleep_for(1ms);
      });
    });
    measure("mistake: nap 5 ms and poll the stream", [&](const ch03::Lane& l, ch03::RoundSignal&) {
      return run_rounds_with(l, rounds, [&](int) {
        while (cudaStreamQuery(l.stream) == cudaErrorNotReady) std::this_thread::sleep_for(5ms);
      });
    });
  }
  std::fflush(stdout);
  SUCCEED();
}

TEST_CASE("step 4: measure both sides of the prefetch bar", "[ch03][step4][.measure]") {
  std::printf("device %s\n", cml::test::device().name.c_str());
  const auto& dev = cml::test::device();
  std::size_t n = std::size_t{64} << 20;
  while (3 * n * sizeof(unsigned) + (std::size_t{512} << 20) > dev.free_bytes && n > (std::size_t{1} << 20)) n /= 2;
  Fixture f(n, 1009, 5);
  const ch03::PinnedCopy copy(f.owner);
  const std::size_t bytes = n * sizeof(unsigned);
  const cml::Work to_host = [&](cudaStream_t s) { ch03::move_pages(f.lane, ch03::host_location(), s); };
  // The mistake: the same bytes, prefetched in 2 MiB pieces (a page-by-page prefetch is
  // slower still), each on the lane's stream.
  const cml::Work pieces = [&](cudaStream_t) {
    for (std::size_t off = 0; off < bytes; off += std::size_t{2} << 20)
      CUDA_CHECK(cudaMemPrefetchAsync(reinterpret_cast<char*>(f.lane.data) + off,
                                      std::min<std::size_t>(std::size_t{2} << 20, bytes - off),
                                      ch03::device_location(f.lane.device), 0, f.lane.stream));
  };
  for (int run = 0; run < 5; ++run) {
    const auto st = cml::time_interleaved(
        {to_host, {}, to_host},
        {[&](cudaStream_t) { ch03::prefetch_to_gpu(f.lane); }, [&](cudaStream_t s) { copy.to_gpu(s); }, pieces},
        f.lane.stream, {1, 7}, cml::Clock::Host);
    std::printf("prefetch bar run %d: prefetch_to_gpu %s, mistake (2 MiB pieces) %s of the pinned copy (bar %.2f)\n",
                run, cml::ratio_text(st[1], st[0]).c_str(), cml::ratio_text(st[1], st[2]).c_str(), kPrefetchOverCopy);
  }
  std::fflush(stdout);
  SUCCEED();
}
