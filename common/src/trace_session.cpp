// The recording session: one Recorder at a time switches CUPTI's activity kinds on, and
// stop() or discard() collects what the buffers delivered. See trace_internal.hpp.
#include "trace_internal.hpp"

#include "cml/errors.hpp"
#include "cupti_error.hpp"

#include <algorithm>
#include <atomic>
#include <cctype>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <mutex>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace cml::trace {

using namespace detail;  // this file is where the shared pieces come together

namespace {

// --- Recording session state ----------------------------------------------------------
// One Recorder at a time (the store and CUPTI's activity switches are process-wide). The
// flag is taken in the constructor and given back when recording ends, by stop() or the
// destructor; the rest of this state is only touched by the Recorder holding the flag.
std::atomic<bool> g_recording{false};
bool g_callbacks_registered = false;
std::vector<CUpti_ActivityKind> g_enabled;  // what stop() must switch off again

// cuptiActivityRegisterCallbacks once per process: CUPTI keeps one pair of callbacks, and
// they serve every Recorder. A failure is not remembered, so a later Recorder tries again.
std::string register_callbacks() {
  if (g_callbacks_registered) return {};
  std::string err = CUPTI_CALL(cuptiActivityRegisterCallbacks(buffer_requested, buffer_completed));
  g_callbacks_registered = err.empty();
  return err;
}

const char* kind_name(CUpti_ActivityKind k) {
  switch (k) {
    case CUPTI_ACTIVITY_KIND_MEMCPY: return "MEMCPY";
    case CUPTI_ACTIVITY_KIND_MEMCPY2: return "MEMCPY2";
    case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL: return "CONCURRENT_KERNEL";
    case CUPTI_ACTIVITY_KIND_MEMSET: return "MEMSET";
    case CUPTI_ACTIVITY_KIND_UNIFIED_MEMORY_COUNTER: return "UNIFIED_MEMORY_COUNTER";
    default: return "other";
  }
}

void disable_all() {
  // Errors are ignored: this runs on the way out (also from the destructor), and a kind
  // that will not switch off leaves nothing we could do better.
  for (CUpti_ActivityKind k : g_enabled) (void)cuptiActivityDisable(k);
  g_enabled.clear();
}

void release_recording_slot() { g_recording.store(false); }

// Orders a record list by start time: buffers arrive in no promised order, and tests
// reason about "the first copy" or "the copy before the kernel".
template <typename Record>
void sort_by_start(std::vector<Record>& xs) {
  std::stable_sort(xs.begin(), xs.end(), [](const Record& a, const Record& b) { return a.when.start < b.when.start; });
}

}  // namespace

namespace detail {

std::string enable(CUpti_ActivityKind kind) {
  const CUptiResult r = cuptiActivityEnable(kind);
  if (r != CUPTI_SUCCESS)
    return cupti_failure(r, (std::string("cuptiActivityEnable(") + kind_name(kind) + ")").c_str());
  g_enabled.push_back(kind);
  return {};
}

}  // namespace detail

// --- Recorder -------------------------------------------------------------------------

bool disabled_by_environment() {
  const char* v = std::getenv("CML_TRACE");
  if (v == nullptr) return false;
  std::string s(v);
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s == "off" || s == "0";
}

Recorder::Recorder(Options opts) : opts_(opts) {
  bool expected = false;
  if (!g_recording.compare_exchange_strong(expected, true))
    throw std::logic_error(
        "cml::trace::Recorder: another Recorder is still recording (CUPTI's activity buffers "
        "are per process): stop() it before starting a new one");
  active_ = true;
  {
    // A fresh start, also when tracing is off: stop() must not hand back anything that an
    // earlier Recorder's buffers delivered late.
    Store& s = store();
    std::lock_guard<std::mutex> lock(s.mu);
    s.records = Trace{};
    s.dropped = 0;
    s.problem.clear();
  }
  if (disabled_by_environment()) {
    error_ = "tracing is off (CML_TRACE=off)";
    return;
  }
  try {
    // The unified-memory counters can only be configured once CUDA (the driver) is up.
    // select_device normally did that already; cudaFree(nullptr) is the usual no-op that
    // makes sure.
    if (opts_.unified_memory) CUDA_CHECK(cudaFree(nullptr));

    add_problem(error_, register_callbacks());
    if (!error_.empty()) return;  // without callbacks nothing can be delivered
    fill_buffer_pool();
    std::string err;
    if (opts_.copies) add_problem(err, enable(CUPTI_ACTIVITY_KIND_MEMCPY));
    if (opts_.copies) add_problem(err, enable(CUPTI_ACTIVITY_KIND_MEMCPY2));  // between devices
    if (opts_.kernels) add_problem(err, enable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL));
    if (opts_.memsets) add_problem(err, enable(CUPTI_ACTIVITY_KIND_MEMSET));
    if (!err.empty()) {
      // A refused core kind (typically another CUPTI client: compute-sanitizer, ncu) makes
      // the whole trace worthless; switch off what did start so stop() has nothing to do.
      disable_all();
      error_ = err;
      return;
    }
    // Unified memory is the exception: a refusal there is recorded (the trace is not ok,
    // since what was asked for is missing) but copies and kernels keep being recorded.
    if (opts_.unified_memory) {
      add_problem(error_, enable_unified_memory());
      prime_unified_memory_once();
    }
  } catch (...) {
    // A CUDA error (the only thing that throws above) leaves no Recorder: undo what we did.
    disable_all();
    active_ = false;
    release_recording_slot();
    throw;
  }
}

Recorder::~Recorder() {
  if (!active_) return;
  try {
    (void)stop();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "warning: cml::trace::Recorder: stopping failed: %s\n", e.what());
  } catch (...) {
    std::fprintf(stderr, "warning: cml::trace::Recorder: stopping failed\n");
  }
}

Trace Recorder::stop() {
  Trace out;
  if (!active_) {
    out.error = "already stopped";
    return out;
  }
  active_ = false;

  // Whatever happens below (the synchronise can throw for an earlier asynchronous error),
  // CUPTI's kinds go off and the slot is freed, so the next Recorder starts clean.
  struct Finish {
    ~Finish() {
      disable_all();
      release_recording_slot();
    }
  } finish;

  // Every operation must have finished before its record is complete.
  CUDA_CHECK(cudaDeviceSynchronize());

  if (g_callbacks_registered && !g_enabled.empty()) {
    // Flush, switch off, flush again: the first flush delivers everything recorded, the
    // second whatever slipped in before the switch-off (other threads' work), so none of
    // it is left in CUPTI's buffers to show up in the next Recorder's trace.
    add_problem(out.error, CUPTI_CALL(cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED)));
    if (opts_.unified_memory) settle_unified_records();
    disable_all();
    add_problem(out.error, CUPTI_CALL(cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED)));
  }

  // Drops not yet counted by a buffer_completed call. Asked outside the store's lock:
  // CUPTI may hold its own lock while it calls buffer_completed, which takes ours.
  size_t late = 0;
  if (g_callbacks_registered && cuptiActivityGetNumDroppedRecords(nullptr, 0, &late) != CUPTI_SUCCESS) late = 0;
  {
    Store& s = store();
    std::lock_guard<std::mutex> lock(s.mu);
    s.dropped += late;
    out.copies = std::move(s.records.copies);
    out.kernels = std::move(s.records.kernels);
    out.memsets = std::move(s.records.memsets);
    out.unified = std::move(s.records.unified);
    out.dropped = s.dropped;
    add_problem(out.error, s.problem);
    s.records = Trace{};
    s.dropped = 0;
    s.problem.clear();
  }
  sort_by_start(out.copies);
  sort_by_start(out.kernels);
  sort_by_start(out.memsets);
  sort_by_start(out.unified);

  // The constructor's problems come first: they are the cause, later ones the consequence.
  std::string error = error_;
  add_problem(error, out.error);
  if (out.dropped > 0)
    add_problem(error, "CUPTI dropped " + std::to_string(out.dropped) +
                           " activity record(s) for lack of buffer space: the trace is incomplete");
  out.error = error;
  out.ok = out.error.empty();
  return out;
}

std::uint64_t timestamp_ns() {
  uint64_t t = 0;
  if (cuptiGetTimestamp(&t) != CUPTI_SUCCESS) return 0;
  return t;
}

void Recorder::discard() {
  if (!active_) return;
  CUDA_CHECK(cudaDeviceSynchronize());
  if (g_callbacks_registered && !g_enabled.empty())
    add_problem(error_, CUPTI_CALL(cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED)));
  Store& s = store();
  std::lock_guard<std::mutex> lock(s.mu);
  s.records = Trace{};
}

}  // namespace cml::trace
