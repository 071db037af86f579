// Chapter 03's test helpers (tests/test_03_unified_memory.cpp includes this, and nothing else
// does): the lanes' runs on threads of their own, what the API recorder saw of them, and the
// fixtures of one and of many lanes. The cases, their bars and check_rounds are in the .cpp.
#pragma once

#include "api_calls.hpp"
#include "enqueue_only.hpp"
#include "integrity.hpp"
#include "gpu.hpp"
#include "jitter.hpp"
#include "sanitizer_target.hpp"
#include "harness.hpp"
#include "unified_memory.cuh"

#include "cml/api_trace.hpp"
#include "cml/table.hpp"
#include "cml/buffers.hpp"
#include "cml/cli.hpp"
#include "cml/timing.hpp"
#include "cml/trace.hpp"
#include "cml/verify.hpp"

#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <ctime>
#include <exception>
#include <functional>
#include <map>
#include <memory>
#include <random>
#include <sstream>
#include <string>
#include <thread>
#include <utility>
#include <vector>

namespace {

using cml::test::jitter;  // sizes no code can special-case

// A table of its own and one lane over a managed buffer first touched on the CPU.
struct Fixture {
  Fixture(std::size_t n, std::size_t table_n, unsigned seed)
      : table(ch03::random_table(table_n, seed)),
        owner(n, table, cml::test::device().index, seed + 1),
        data(owner.data),
        signal(owner.signal),
        lane(owner.lane),
        progress(owner.progress) {}
  std::vector<unsigned> after_rounds(int rounds) const { return owner.after_rounds(rounds); }
  cml::ManagedBuffer<unsigned> table;
  ch03::LaneOwner owner;
  cml::ManagedBuffer<unsigned>& data;
  ch03::RoundSignal& signal;
  ch03::Lane& lane;
  ch03::Progress& progress;
};

// What the lane's thread did while run_lane ran on it.
struct LaneRun {
  std::string error;  // what run_lane threw
  double wall_ms = 0, cpu_ms = 0;
  long switches = 0;  // voluntary context switches
};

double thread_cpu_ms() {
  timespec t{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}

long thread_switches() {
  rusage u{};
  getrusage(RUSAGE_THREAD, &u);
  return u.ru_nvcsw;
}

// run_lane on a thread of its own, as the program runs it.
LaneRun run_on_thread(const ch03::Lane& lane, int rounds, ch03::RoundSignal& signal) {
  LaneRun out;
  const auto errors = ch03::on_threads(1, cml::test::device().index, [&](int) {
    const long s0 = thread_switches();
    const double c0 = thread_cpu_ms();
    const auto t0 = std::chrono::steady_clock::now();
    ch03::run_lane(lane, rounds, signal);
    out.wall_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    out.cpu_ms = thread_cpu_ms() - c0;
    out.switches = thread_switches() - s0;
  });
  out.error = ch03::message(errors[0]);
  return out;
}

std::string rounds_text(const std::vector<int>& rounds) {
  std::ostringstream o;
  for (std::size_t i = 0; i < rounds.size(); ++i) o << (i ? ", " : "") << rounds[i];
  return rounds.empty() ? "none" : o.str();
}

// The calls of `calls` made for `lane`, in order, as letters: G a prefetch of lane.data to
// the GPU, K the lane's kernel (gpu_step), C a prefetch of lane.data to the host, H a host
// function; each on the stream it was enqueued on. What the stream will run, in its order.
struct Enqueued {
  char what;
  cudaStream_t stream;
  const void* user;  // a host function's userData
};
// A launch of the provided launch_gpu_step's kernel.
bool is_gpu_step_launch(const cml::api::Call& c) {
  return cml::test::base_name(c.name).rfind("cudaLaunchKernel", 0) == 0 &&
         c.symbol.find("gpu_step") != std::string::npos;
}

std::vector<Enqueued> enqueued_for(const cml::api::Calls& calls, const ch03::Lane& lane) {
  std::vector<Enqueued> out;
  for (const auto& c : calls.calls) {
    const std::string name = cml::test::base_name(c.name);
    if (name == "cudaMemPrefetchAsync" && c.ptr == lane.data)
      out.push_back({c.location.type == cudaMemLocationTypeDevice ? 'G' : 'C', c.stream, nullptr});
    else if (is_gpu_step_launch(c) && c.stream == lane.stream)
      out.push_back({'K', c.stream, nullptr});
    else if (name == "cudaLaunchHostFunc" && c.stream == lane.stream)
      out.push_back({'H', c.stream, c.ptr});
  }
  return out;
}

// The host steps as host_step marked them among the recorded calls (provided.cu): each
// one's round, whether it is the step's beginning or end, its thread, and its index in
// calls.calls (the marks are in order with the calls).
struct HostStepMark {
  int round = 0;
  bool begin = false;
  std::thread::id thread;
  std::size_t at = 0;
};
std::vector<HostStepMark> host_step_marks(const cml::api::Calls& calls) {
  std::vector<HostStepMark> out;
  for (std::size_t i = 0; i < calls.calls.size(); ++i) {
    const auto& c = calls.calls[i];
    if (c.name != cml::api::kMark) continue;
    for (const bool begin : {true, false}) {
      const std::string head = begin ? "host_step begin " : "host_step end ";
      if (c.symbol.rfind(head, 0) == 0) out.push_back({std::stoi(c.symbol.substr(head.size())), begin, c.thread, i});
    }
  }
  return out;
}

// The rounds whose host step ran on another thread than the one that launched the lane's
// kernels (the thread run_lane was called on): the host step moved into the host function,
// onto CUDA's own thread for host functions. None: empty.
std::vector<int> host_steps_off_thread(const cml::api::Calls& calls) {
  std::thread::id lane_thread;
  for (const auto& c : calls.calls)
    if (is_gpu_step_launch(c)) {
      lane_thread = c.thread;
      break;
    }
  std::vector<int> out;
  for (const auto& m : host_step_marks(calls))
    if (m.begin && m.thread != lane_thread) out.push_back(m.round);
  return out;
}

// The first round r >= 1 whose move of lane.data to the GPU was enqueued before round
// r - 1's host step had ended (while the host still read and wrote the data), or -1. Round r's
// moves to the GPU are those made after round r - 1's host function and before round r's
// kernel; one made between a kernel and its host function is another mistake, judged by the
// other checks.
int first_prefetch_under_host_step(const cml::api::Calls& calls, const ch03::Lane& lane) {
  int ended = -1, kernels = 0, host_funcs = 0;
  const auto marks = host_step_marks(calls);
  std::size_t next_mark = 0;
  for (std::size_t i = 0; i < calls.calls.size(); ++i) {
    while (next_mark < marks.size() && marks[next_mark].at < i) {
      if (!marks[next_mark].begin) ended = std::max(ended, marks[next_mark].round);
      ++next_mark;
    }
    const auto& c = calls.calls[i];
    const std::string name = cml::test::base_name(c.name);
    if (is_gpu_step_launch(c)) ++kernels;
    if (name == "cudaLaunchHostFunc" && c.stream == lane.stream) ++host_funcs;
    if (name != "cudaMemPrefetchAsync" || c.ptr != lane.data || c.location.type != cudaMemLocationTypeDevice) continue;
    const int round = kernels;  // the kernel this move goes before
    if (round >= 1 && host_funcs == kernels && ended < round - 1) return round;
  }
  return -1;
}

// Step 4: no round's move to the GPU enqueued while the previous round's host step ran.
void check_no_prefetch_under_host_step(const cml::api::Calls& calls, const ch03::Lane& lane) {
  const int early = first_prefetch_under_host_step(calls, lane);
  INFO("round " << early << "'s move of lane.data to the GPU was enqueued before round " << early - 1
                << "'s host step had ended: the pages move to the GPU while the host still reads and writes them, "
                   "and fault back one by one. Enqueue the next round's move to the GPU after host_step returns "
                   "(step 4; ./lab hint 03)");
  CHECK(early < 0);
}

// The round `error` says was never signalled ("round 3 was never signalled ..."), or -1.
int never_signalled_round(const std::string& error) {
  const std::string tail = " was never signalled";
  const std::size_t at = error.find(tail);
  if (at == std::string::npos) return -1;
  const std::size_t start = error.rfind("round ", at);
  if (start == std::string::npos) return -1;
  try {
    return std::stoi(error.substr(start + 6, at - start - 6));
  } catch (const std::exception&) {
    return -1;
  }
}

// What a round that was never signalled says about the lane's wait, from the round waited
// for, the GPU steps launched, the rounds the signal counted and, where the callback
// recorder ran (`calls`), the host functions enqueued for this lane's signal: "" when the
// error is another one. Two waits go wrong differently: one for a round counted from 1
// (wait_for(r + 1)) and one before the host function it waits for is enqueued.
std::string never_signalled_advice(const std::string& error, const ch03::Lane& lane, const ch03::RoundSignal& signal,
                                   const cml::api::Calls* calls) {
  const int round = never_signalled_round(error);
  if (round < 0) return "";
  const int launched = lane.progress != nullptr ? lane.progress->launches : -1;
  if (launched >= 0 && round >= launched)
    return ". run_lane waited for round " + std::to_string(round) + " when " + std::to_string(launched) +
           " GPU step(s) had been launched: signal.wait_for(r) takes the round whose GPU work must be done, counted "
           "from 0 — round r's host function makes the count r + 1, and wait_for(r) returns once the count is more "
           "than r (step 3; ./lab hint 03)";
  std::string enqueued;
  if (calls != nullptr && calls->ok) {
    int mine = 0, elsewhere = 0;
    for (const auto& c : calls->calls)
      if (cml::test::base_name(c.name) == "cudaLaunchHostFunc" && c.ptr == &signal)
        (c.stream == lane.stream ? mine : elsewhere)++;
    if (mine > round)
      return ". round " + std::to_string(round) + "'s host function was enqueued on lane.stream (" +
             std::to_string(mine) +
             " for this signal) but never ran: something on lane.stream never finished "
             "(step 3; ./lab hint 03)";
    enqueued = std::to_string(mine) + " host function(s) had been enqueued on lane.stream for this lane's signal" +
               (elsewhere > 0 ? " (and " + std::to_string(elsewhere) + " on other streams)" : std::string()) + ", ";
  }
  return ". When run_lane waited for round " + std::to_string(round) + ", " + enqueued + "the signal had counted " +
         std::to_string(signal.done()) + " round(s): round " + std::to_string(round) +
         "'s own host function was "
         "not enqueued before the wait. signal.wait_for(r) sleeps until that host function has run, so one enqueued "
         "after the wait (or never) is never reached: enqueue it first — on lane.stream, after the round's kernel "
         "and its move back, once per round — then wait (step 3; ./lab hint 03)";
}

// run_on_thread under the API recorder: the run and the calls it made, once it has ended
// without an error (else the failure, with never_signalled_advice's reading of it).
struct RecordedRun {
  LaneRun run;
  cml::api::Calls calls;
};
RecordedRun recorded_run(Fixture& f, int rounds) {
  RecordedRun r;
  {
    cml::api::Recorder recorder;
    r.run = run_on_thread(f.lane, rounds, f.signal);
    r.calls = recorder.stop();
  }
  CUDA_CHECK(cudaDeviceSynchronize());
  CML_REQUIRE_API_OK(r.calls);
  INFO("run_lane threw: " << r.run.error << never_signalled_advice(r.run.error, f.lane, f.signal, &r.calls));
  REQUIRE(r.run.error.empty());
  return r;
}

// Step 1's promises, in the order a learner meets them: the rounds ran (each a GPU step
// and a host step, in order), no host step began before its kernel finished, and the
// host did not wait much longer than the GPU needed. `race`: the kernels waited at random.
// `calls`: what the callback recorder saw, where it ran (names the wait's mistake).

// Lanes of different sizes sharing one table, each with its own buffer, stream and signal,
// run at once on threads of their own, as the program runs them: a step done once per
// process (a function-static, a std::call_once) instead of once per lane shows only with
// several lanes in one process.
struct ManyLanes {
  explicit ManyLanes(unsigned seed) : table(ch03::random_table(1009, seed)) {
    for (const std::size_t n : {jitter(65536 + 5), jitter(4096 + 3), jitter(777)})
      lanes.push_back(
          std::make_unique<ch03::LaneOwner>(n, table, cml::test::device().index, seed + static_cast<unsigned>(n)));
  }
  // run_lane on every lane at once: what each one threw ("" where nothing).
  std::vector<std::string> run(int rounds) {
    const auto failures = ch03::on_threads(static_cast<int>(lanes.size()), cml::test::device().index, [&](int t) {
      ch03::run_lane(lanes[static_cast<std::size_t>(t)]->lane, rounds, lanes[static_cast<std::size_t>(t)]->signal);
    });
    std::vector<std::string> out;
    for (const auto& e : failures) out.push_back(ch03::message(e));
    return out;
  }
  // run(rounds) with the API calls recorded, the device synchronised after: the calls, and
  // what each lane threw in `errors`.
  cml::api::Calls run_recorded(int rounds, std::vector<std::string>& errors) {
    cml::api::Recorder recorder;
    errors = run(rounds);
    auto calls = recorder.stop();
    CUDA_CHECK(cudaDeviceSynchronize());
    return calls;
  }
  // "lane k" for the lane whose stream, buffer or signal `what` is; "no lane" otherwise.
  std::string owner(const void* what) const {
    for (std::size_t k = 0; k < lanes.size(); ++k)
      if (what == lanes[k]->lane.stream || what == lanes[k]->lane.data || what == &lanes[k]->signal)
        return "lane " + std::to_string(k);
    return what == nullptr ? "the legacy stream" : "no lane";
  }
  // Which lane each host thread ran: the one whose kernels (the provided launch_gpu_step,
  // on lane.stream) it launched, or whose buffer it attached to that buffer's own stream
  // (a lane that failed before its first kernel). Calls are judged by the lane whose
  // thread made them.
  std::map<std::thread::id, std::size_t> threads(const cml::api::Calls& calls) const {
    std::map<std::thread::id, std::size_t> out;
    for (const auto& c : calls.calls) {
      const std::string name = cml::test::base_name(c.name);
      const bool kernel = is_gpu_step_launch(c);
      for (std::size_t k = 0; k < lanes.size(); ++k)
        if (c.stream == lanes[k]->lane.stream &&
            (kernel || (name == "cudaStreamAttachMemAsync" && c.ptr == lanes[k]->lane.data)))
          out.emplace(c.thread, k);
    }
    return out;
  }
  // The calls named `name` (a runtime function) that a lane's thread made, each with the
  // index of that lane; calls from other threads (the test's own) are left out.
  std::vector<std::pair<std::size_t, const cml::api::Call*>> lane_calls(const cml::api::Calls& calls,
                                                                        const char* name) const {
    const auto lane_of = threads(calls);
    std::vector<std::pair<std::size_t, const cml::api::Call*>> out;
    for (const auto& c : calls.calls) {
      if (cml::test::base_name(c.name) != name) continue;
      const auto it = lane_of.find(c.thread);
      if (it != lane_of.end()) out.emplace_back(it->second, &c);
    }
    return out;
  }
  std::string describe(std::size_t t) const {
    return "lane " + std::to_string(t) + " of " + std::to_string(lanes.size()) + " (" +
           std::to_string(lanes[t]->lane.n) + " words)";
  }
  // After the run: each lane threw nothing and holds what `rounds` rounds make.
  void check_results(const std::vector<std::string>& errors, int rounds, const char* step) const {
    for (std::size_t t = 0; t < lanes.size(); ++t) {
      {
        INFO(describe(t) << ": run_lane threw: " << errors[t]
                         << never_signalled_advice(errors[t], lanes[t]->lane, lanes[t]->signal, nullptr));
        CHECK(errors[t].empty());
      }
      const auto want = lanes[t]->after_rounds(rounds);
      const auto r = cml::compare_exact(lanes[t]->data.data(), want.data(), want.size());
      INFO(describe(t) << ": " << r.describe() << " (" << step << ")");
      CHECK(r.ok);
    }
  }
  cml::ManagedBuffer<unsigned> table;
  std::vector<std::unique_ptr<ch03::LaneOwner>> lanes;
};

}  // namespace
