// Chapter 03 — see sync_rules.hpp.
#include "sync_rules.hpp"

#include "harness.hpp"
#include "unified_memory.cuh"

#include "cml/errors.hpp"
#include "cml/stream.hpp"
#include "cml/table.hpp"
#include "cml/verify.hpp"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <functional>
#include <string>
#include <thread>
#include <vector>

namespace ch03 {

namespace {

// Each rule's kernel waits this long on the GPU's clock before it writes, so a call that
// returns before the kernel is done would let the host in early, and the GPU's mark shows it.
constexpr double kKernelMs = 20;
// The kernel the host works beside: long enough that every host access below ends before it.
constexpr double kLongKernelMs = 100;
constexpr std::size_t kMaxWords = 1 << 20;  // 4 MiB per lane: enough pages, quick on the host

using Clock = std::chrono::steady_clock;
double ms_since(Clock::time_point t0) { return std::chrono::duration<double, std::milli>(Clock::now() - t0).count(); }

// Asks `query` (cudaStreamQuery or cudaEventQuery of one handle) until it answers cudaSuccess;
// returns how often it answered cudaErrorNotReady first. Only cudaSuccess says the work is
// done: "not ready" is an answer, not permission.
long poll(const std::function<cudaError_t()>& query) {
  long not_ready = 0;
  for (cudaError_t e = query(); e != cudaSuccess; e = query()) {
    if (e != cudaErrorNotReady) CUDA_CHECK(e);
    ++not_ready;
    std::this_thread::yield();
  }
  // A later launch's check reads the thread's last error: a "not ready" answer kept there
  // must not pass for the launch's own failure.
  if (cudaPeekAtLastError() == cudaErrorNotReady) (void)cudaGetLastError();
  return not_ready;
}

// The host function of the callback rule: the host step itself, on the driver's thread,
// then the signal the lane's thread waits on. It makes no CUDA call (a host function may not).
void CUDART_CB step_then_signal(void* owner) {
  auto* o = static_cast<LaneOwner*>(owner);
  host_step(o->lane, 0);
  RoundSignal::on_gpu_done(&o->signal);
}

// Where the host's step happens relative to the wait.
enum class Step { AfterWait, InHostFunction, NoWait };

// One way for the host to learn that the kernel before it is done. `done` was recorded on the
// lane's stream right after the kernel. Returns the "not ready" answers of a polled query
// (-1: not a query).
struct WaitRule {
  const char* call;
  const char* condition;  // the guide's, for a GPU without concurrentManagedAccess
  Step step;
  long (*wait)(LaneOwner& owner, cudaEvent_t done);
};

const std::vector<WaitRule> kWaitRules = {
    {"cudaDeviceSynchronize", "always", Step::AfterWait,
     [](LaneOwner&, cudaEvent_t) {
       CUDA_CHECK(cudaDeviceSynchronize());
       return -1L;
     }},
    {"cudaStreamSynchronize(stream)", "no other stream still runs", Step::AfterWait,
     [](LaneOwner& o, cudaEvent_t) {
       CUDA_CHECK(cudaStreamSynchronize(o.lane.stream));
       return -1L;
     }},
    {"cudaEventSynchronize(event after the kernel)", "no device work after the event", Step::AfterWait,
     [](LaneOwner&, cudaEvent_t e) {
       CUDA_CHECK(cudaEventSynchronize(e));
       return -1L;
     }},
    // Completion inferred through a dependency: only the other stream is waited for, and it
    // waited for the kernel's event, so the kernel is done too.
    {"cudaStreamSynchronize(another stream that waited for the kernel's event)",
     "no stream but that one still runs; the wait carries the kernel's completion", Step::AfterWait,
     [](LaneOwner&, cudaEvent_t e) {
       const cml::Stream other;
       CUDA_CHECK(cudaStreamWaitEvent(other, e, 0));
       CUDA_CHECK(cudaStreamSynchronize(other));
       return -1L;
     }},
    {"cudaStreamQuery(stream) until cudaSuccess", "no other stream still runs", Step::AfterWait,
     [](LaneOwner& o, cudaEvent_t) { return poll([&] { return cudaStreamQuery(o.lane.stream); }); }},
    {"cudaEventQuery(event after the kernel) until cudaSuccess", "no device work after the event", Step::AfterWait,
     [](LaneOwner&, cudaEvent_t e) { return poll([&] { return cudaEventQuery(e); }); }},
    {"host function after the kernel (cudaLaunchHostFunc) does the host step",
     "no other stream that may use managed data is active", Step::InHostFunction,
     [](LaneOwner& o, cudaEvent_t) {
       CUDA_CHECK(cudaLaunchHostFunc(o.lane.stream, step_then_signal, &o));
       o.signal.wait_for(0);
       return -1L;
     }},
    {"none (the control: a race; concurrentManagedAccess = 1 only)", "never: a segmentation fault", Step::NoWait,
     nullptr},
};

// One rule, on a lane of its own: the kernel (it waits kKernelMs, then writes every word),
// the wait, the host step; then the data against the CPU, and whether the host step began
// before the GPU marked the kernel finished.
struct RuleRun {
  double waited_ms = 0;
  long not_ready = -1;
  bool early = false;
  cml::VerifyResult result;
};

RuleRun run_rule(const WaitRule& rule, std::size_t n, const cml::ManagedBuffer<unsigned>& table, int device,
                 unsigned seed) {
  LaneOwner owner(n, table, device, seed);
  owner.progress.fixed_delay_ms = kKernelMs;
  const cml::Event done(cudaEventDisableTiming);
  launch_gpu_step(owner.lane, 0);
  done.record(owner.lane.stream);
  RuleRun r;
  const auto t0 = Clock::now();
  if (rule.wait) r.not_ready = rule.wait(owner, done);
  r.waited_ms = ms_since(t0);
  if (rule.step != Step::InHostFunction) host_step(owner.lane, 0);
  CUDA_CHECK(cudaDeviceSynchronize());  // the control's kernel may still be running
  r.early = !owner.progress.early_steps.empty();
  const std::vector<unsigned> want = owner.after_rounds(1);
  r.result = cml::compare_exact(owner.data.data(), want.data(), n);
  return r;
}

bool wait_rules(const cml::Run& run, const cml::ManagedBuffer<unsigned>& table, std::size_t n) {
  const bool concurrent = run.facts.concurrent_managed_access;
  std::printf(
      "\n-- After a kernel on a stream: which calls let the host touch its managed data --\n"
      "each row: a kernel that waits %.0f ms on the GPU's clock, then writes all %zu words of its lane's\n"
      "managed buffer; the host waits as the row says, then does the chapter's host step on them\n",
      kKernelMs, n);
  cml::Table t("sync_rules", {"how the host waited", "the guide's condition (concurrentManagedAccess = 0)",
                              "host waited ms", "not-ready answers", "host step before the kernel's end", "result"});
  bool ok = true;
  unsigned seed = 500;
  for (const WaitRule& rule : kWaitRules) {
    ++seed;
    if (rule.step == Step::NoWait && !concurrent) {
      t.row({rule.call, rule.condition, "-", "-", "-", "not run: without concurrentManagedAccess it would crash"});
      continue;
    }
    const RuleRun r = run_rule(rule, n, table, run.facts.index, seed);
    std::string result;
    if (rule.step == Step::NoWait) {
      // The control shows that the checks can see a host that did not wait: the GPU's mark
      // must catch it, whatever the data happens to hold.
      result = r.early ? (r.result.ok ? "caught by the mark (the data came out right by chance)"
                                      : "caught by the mark; " + std::to_string(r.result.bad_count) + " of " +
                                            std::to_string(r.result.count) + " words wrong")
                       : "FAILED: the GPU's mark did not see a host that never waited";
      ok &= r.early;
    } else {
      result = r.early ? "FAILED: the host step began before the kernel finished" : r.result.describe();
      ok &= !r.early && r.result.ok;
    }
    t.row({rule.call, rule.condition, cml::fixed(r.waited_ms, 2), r.not_ready < 0 ? "-" : std::to_string(r.not_ready),
           r.early ? "yes" : "no", result});
  }
  run.emit(t);
  return ok;
}

// Writes a pattern into p[0, n) from the host and reads it back: the host can use memory of
// this kind right now.
cml::VerifyResult host_writes_and_reads(unsigned* p, std::size_t n, unsigned salt) {
  std::vector<unsigned> want(n);
  for (std::size_t i = 0; i < n; ++i) want[i] = p[i] = static_cast<unsigned>(i) * 2654435761u ^ salt;
  return cml::compare_exact(p, want.data(), n);
}

bool during_kernel(const cml::Run& run, const cml::ManagedBuffer<unsigned>& table, std::size_t n) {
  const bool concurrent = run.facts.concurrent_managed_access;
  std::printf(
      "\n-- While a kernel runs: what the host may touch --\n"
      "a kernel on lane A's managed buffer waits %.0f ms, then writes it; meanwhile the host writes and reads\n"
      "back %zu words of each kind of memory below; the GPU's mark says whether the kernel was still running\n",
      kLongKernelMs, n);
  LaneOwner a(n, table, run.facts.index, 600);
  a.progress.fixed_delay_ms = kLongKernelMs;
  cml::PinnedBuffer<unsigned> pinned(n);  // cudaHostAlloc with default flags: cudaMallocHost's memory
  cml::MappedBuffer<unsigned> mapped(n);
  cml::ManagedBuffer<unsigned> other;  // managed data the kernel does not use
  if (concurrent) {
    other = cml::ManagedBuffer<unsigned>(n);
    std::fill(other.begin(), other.end(), 0u);  // its pages exist on the host before the kernel starts
  }
  struct Touch {
    std::string memory;
    unsigned* p;  // null: not run on this GPU
    const char* otherwise;
  };
  const std::vector<Touch> touches = {
      {"pinned (cudaHostAlloc, default flags: what cudaMallocHost gives)", pinned.data(), ""},
      {"mapped (cudaHostAllocMapped, the kernel could read it)", mapped.data(), ""},
      {"managed, a buffer the kernel does not use", other.data(),
       "not run: with concurrentManagedAccess = 0 the guide says this faults, even though the kernel never uses it"},
  };
  cml::Table t("during_kernel", {"memory", "host wrote and read back", "kernel still running after"});
  bool ok = true;
  launch_gpu_step(a.lane, 0);
  unsigned salt = 0x5EED;
  for (const Touch& touch : touches) {
    if (touch.p == nullptr) {
      t.row({touch.memory, touch.otherwise, "-"});
      continue;
    }
    const cml::VerifyResult r = host_writes_and_reads(touch.p, n, ++salt);
    const bool running = *a.progress.finished_round == 0;  // the kernel's last block sets it to 1
    ok &= r.ok && running;
    t.row({touch.memory, r.describe(),
           running ? "yes" : "no: the kernel had finished, so this row shows nothing (FAILED)"});
  }
  CUDA_CHECK(cudaStreamSynchronize(a.lane.stream));
  host_step(a.lane, 0);
  const std::vector<unsigned> want = a.after_rounds(1);
  const cml::VerifyResult kernel = cml::compare_exact(a.data.data(), want.data(), n);
  ok &= kernel.ok;
  t.row({"lane A's managed buffer, the kernel's own",
         "after cudaStreamSynchronize and the host step: " + kernel.describe(), "no (waited for)"});
  run.emit(t);
  return ok;
}

void print_guide(bool concurrent) {
  std::printf(
      "concurrentManagedAccess = %d on this GPU%s\n", concurrent ? 1 : 0,
      concurrent ? ": the host may touch managed memory while kernels run (data a kernel uses is then a race)" : "");
  std::printf(
      "the CUDA Programming Guide, for a GPU with concurrentManagedAccess = 0%s:\n"
      "  - while any kernel runs the GPU is active, and the host must not touch any managed data, even data that\n"
      "    kernel never uses (a segmentation fault), unless it is attached to an idle stream or to the host;\n"
      "  - a synchronise or a query counts only under the condition its row names (the stream the only one\n"
      "    running; no device work after the event);\n"
      "  - on any GPU, kernels of different streams may use the same managed data at once: nothing orders them,\n"
      "    so they may race, as with ordinary device memory.\n",
      concurrent ? " (not this one: nothing below runs that case)"
                 : " (this one: the rows that would fault are not run)");
}

}  // namespace

bool sync_rules(const cml::Run& run, const cml::ManagedBuffer<unsigned>& table, std::size_t bytes) {
  std::printf("\n== Synchronisation rules for managed memory ==\n");
  const bool concurrent = run.facts.concurrent_managed_access;
  print_guide(concurrent);
  // Lanes: one per wait rule and one for the long kernel, plus the buffer it does not use.
  const std::size_t lanes = kWaitRules.size() + 2;
  const std::size_t n = std::max<std::size_t>(1, std::min(kMaxWords, bytes / sizeof(unsigned) / lanes));
  bool ok = wait_rules(run, table, n);
  ok &= during_kernel(run, table, n);
  std::printf("synchronisation rules: %s\n", ok ? "PASSED" : "FAILED");
  return ok;
}

}  // namespace ch03
