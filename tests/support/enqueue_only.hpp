// "Only enqueues", checked one way for every chapter whose contract promises it: the call
// runs while a gate kernel (gate.hpp) holds each stream it was given shut, under CUPTI's
// callback recorder (which calls it made) and activity trace (where its work ran). It only
// enqueued when it returned while the gates were still closed, made no call that waits for
// the GPU, and put its work on its own streams; what it enqueued is in the trace.
//
// Needs the trace: call it from [mechanism] cases after CML_REQUIRE_TRACING().
#pragma once

#include "api_calls.hpp"
#include "gate.hpp"
#include "gpu.hpp"

#include "cml/api_trace.hpp"
#include "cml/errors.hpp"
#include "cml/stream.hpp"
#include "cml/trace.hpp"

#include <cuda_runtime_api.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace cml::test {

// What a call did while its streams were held.
struct Enqueued {
  bool waited = false;      // it returned only after a gate gave up: it waited for the GPU
  std::string blocking;     // the calls it made that make the host wait ("" when none)
  std::string threw;        // what it threw, if it threw
  cml::api::Calls calls;    // every runtime call it made
  cml::trace::Trace trace;  // what ran meanwhile, without the gate kernels

  // "" when it only enqueued; else what it did instead, in words a learner can act on.
  std::string error() const {
    if (!threw.empty()) return "it failed: " + threw;
    if (!blocking.empty())
      return "it made calls that wait for the GPU (" + blocking +
             "): enqueue with asynchronous calls on the "
             "stream you are given and let the caller synchronise (a poll with cudaStreamQuery or cudaEventQuery "
             "is a wait too)";
    if (waited)
      return "it returned only after the work queued before it on its stream had ended: it waited for the GPU";
    return "";
  }
};

// A stream and the device it belongs to (chapter 10's streams are on several devices).
struct DeviceStream {
  int device;
  cudaStream_t stream;
};

// Runs `call` while each of `streams` is held shut, and says what it did.
template <class Call>
Enqueued watch_enqueue_on(const std::vector<DeviceStream>& streams, Call&& call) {
  Enqueued e;
  cml::trace::Recorder trace;  // before the gates: nothing it sets up may wait behind them
  {
    Gate gate;
    int current = 0;
    CUDA_CHECK(cudaGetDevice(&current));
    for (const DeviceStream& s : streams) {
      CUDA_CHECK(cudaSetDevice(s.device));
      gate.close(s.stream);
    }
    CUDA_CHECK(cudaSetDevice(current));
    Recorded r = record_calls(call);
    e.calls = std::move(r.calls);
    e.threw = std::move(r.threw);
    e.waited = gate.timed_out();
  }  // the gate opens, and its kernels end
  e.trace = trace.stop();
  auto& k = e.trace.kernels;
  k.erase(std::remove_if(
              k.begin(), k.end(),
              [](const cml::trace::KernelRecord& r) { return r.name.find(Gate::kernel_name()) != std::string::npos; }),
          k.end());
  e.blocking = blocking_calls(e.calls);
  cudaGetLastError();  // a failed launch of the call's is in `threw` or the trace: clear it for the next case
  return e;
}

// The same, for streams of the current device.
template <class Call>
Enqueued watch_enqueue(const std::vector<cudaStream_t>& streams, Call&& call) {
  int current = 0;
  CUDA_CHECK(cudaGetDevice(&current));
  std::vector<DeviceStream> on;
  for (cudaStream_t s : streams) on.push_back({current, s});
  return watch_enqueue_on(on, std::forward<Call>(call));
}

// "" when every kernel, copy and memset of `t` ran on one of `streams`; else what ran
// elsewhere (how many of each kind, and how many on the legacy default stream).
inline std::string work_elsewhere(const cml::trace::Trace& t, const std::vector<cudaStream_t>& streams) {
  std::vector<std::uint32_t> ids;
  for (cudaStream_t s : streams) ids.push_back(cml::trace::stream_id_of(s));
  const std::uint32_t legacy = cml::trace::stream_id_of(cudaStreamLegacy);
  const auto elsewhere = [&](std::uint32_t id) { return std::find(ids.begin(), ids.end(), id) == ids.end(); };
  std::size_t kernels = 0, copies = 0, memsets = 0, on_legacy = 0;
  for (const auto& r : t.kernels) {
    kernels += elsewhere(r.stream_id);
    on_legacy += elsewhere(r.stream_id) && r.stream_id == legacy;
  }
  for (const auto& r : t.copies) {
    copies += elsewhere(r.stream_id);
    on_legacy += elsewhere(r.stream_id) && r.stream_id == legacy;
  }
  for (const auto& r : t.memsets) {
    memsets += elsewhere(r.stream_id);
    on_legacy += elsewhere(r.stream_id) && r.stream_id == legacy;
  }
  if (kernels + copies + memsets == 0) return "";
  return std::to_string(kernels) + " kernel(s), " + std::to_string(copies) + " copy(ies) and " +
         std::to_string(memsets) + " memset(s) ran on another stream than " +
         (streams.size() == 1 ? "the one it was given" : "the ones it was given") +
         (on_legacy > 0 ? " (" + std::to_string(on_legacy) +
                              " on the legacy default stream: a launch or call "
                              "without a stream argument)"
                        : "");
}

// "" when every kernel, copy and memset of `t` ran on `stream`; else what ran elsewhere.
inline std::string work_elsewhere(const cml::trace::Trace& t, cudaStream_t stream) {
  return work_elsewhere(t, std::vector<cudaStream_t>{stream});
}

// "" when enqueue(stream) only enqueued, and what it enqueued was exactly `kernels`
// kernel launches on that stream and nothing else (0: an empty input enqueues nothing);
// else what it did instead.
template <class Enqueue>
std::string enqueue_only_error(Enqueue&& enqueue, std::size_t kernels) {
  cml::Stream s;
  const Enqueued e = watch_enqueue({s.get()}, [&] { enqueue(static_cast<cudaStream_t>(s)); });
  if (!e.trace.ok) return "the CUPTI trace failed, so this cannot be checked: " + e.trace.error;
  if (!e.calls.ok) return "CUPTI's callback API failed, so this cannot be checked: " + e.calls.error;
  if (const std::string err = e.error(); !err.empty()) return err;
  if (const std::string elsewhere = work_elsewhere(e.trace, s); !elsewhere.empty()) return elsewhere;
  if (e.trace.kernels.size() != kernels || !e.trace.copies.empty() || !e.trace.memsets.empty())
    return "it enqueued " + std::to_string(e.trace.kernels.size()) + " kernel(s), " +
           std::to_string(e.trace.copies.size()) + " copy(ies) and " + std::to_string(e.trace.memsets.size()) +
           " memset(s); want " + std::to_string(kernels) + " kernel(s) and nothing else";
  return "";
}

}  // namespace cml::test

// Checks that `enqueue` (a callable taking the cudaStream_t to enqueue on) only enqueues
// exactly `kernels` kernels on its stream; `what` names the call, `promise` says where the
// contract promises it. Skips when the trace is off (sanitizer runs).
#define CML_CHECK_ENQUEUE_ONLY(what, enqueue, kernels, promise)                                 \
  do {                                                                                          \
    CML_REQUIRE_TRACING();                                                                      \
    const std::string cml_enqueue_err_ = ::cml::test::enqueue_only_error((enqueue), (kernels)); \
    INFO((what) << ": " << cml_enqueue_err_ << " (" << (promise) << ")");                       \
    CHECK(cml_enqueue_err_.empty());                                                            \
  } while (0)

// Fails, naming `what` (the call), when the call watched in `e` did not only enqueue: it
// threw, it made calls that wait for the GPU (then `wait_advice` follows the list of them),
// or it returned only once its streams' earlier work had ended (then `late_advice`).
#define CML_CHECK_ONLY_ENQUEUED(e, what, wait_advice, late_advice)                                  \
  do {                                                                                              \
    CML_REQUIRE_API_OK((e).calls);                                                                  \
    {                                                                                               \
      INFO((what) << " failed: " << (e).threw);                                                     \
      REQUIRE((e).threw.empty());                                                                   \
    }                                                                                               \
    {                                                                                               \
      INFO((what) << " made calls that wait for the GPU: " << (e).blocking << ". " << wait_advice); \
      CHECK((e).blocking.empty());                                                                  \
    }                                                                                               \
    INFO((what) << " returned only after the work queued before it on its stream had ended: it "    \
                   "waited for the GPU. "                                                           \
                << late_advice);                                                                    \
    CHECK_FALSE((e).waited);                                                                        \
  } while (0)
