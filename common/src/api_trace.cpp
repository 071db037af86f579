// See cml/api_trace.hpp. The callback runs on the thread that makes each runtime call, at
// its entry (CUPTI_API_ENTER), and copies the arguments of the calls we decode from their
// CUPTI parameter structs; every other call is recorded by name only. At the call's exit
// (CUPTI_API_EXIT) it notes when the call returned.
#include "cml/api_trace.hpp"

#include "cupti_error.hpp"

#include <cupti.h>  // brings the runtime calls' parameter structs (generated_cuda_runtime_api_meta.h)

#include <atomic>
#include <mutex>
#include <stdexcept>
#include <map>

namespace cml::api {

namespace {

// A loop of calls (a poll on cudaStreamQuery while the GPU is held for seconds) can make
// millions: past this many calls of one name, the others of that name are only counted.
constexpr std::size_t kMaxListedPerName = 10000;

struct State {
  std::mutex mu;
  std::vector<KernelPointers> pointers;  // set before subscribing, read by the callback
  std::vector<Call> calls;
  std::map<std::string, std::size_t> counts;
  std::size_t unlisted = 0;
  CUpti_SubscriberHandle subscriber = nullptr;
};
State& state() {
  static State* s = new State;  // leaked: CUPTI may call back during exit
  return *s;
}
std::atomic<bool> g_active{false};

// A kernel launch's name and, where the test asked for them (State::pointers), the values
// of its first pointer parameters: args[i] points at the i-th parameter's value.
void kernel_launch(Call& c, const char* symbol, void** args) {
  if (symbol != nullptr) c.symbol = symbol;
  if (args == nullptr || c.symbol.empty()) return;
  for (const KernelPointers& k : state().pointers) {
    if (k.name.empty() || c.symbol.find(k.name) == std::string::npos) continue;
    const int count = k.count < 0                                     ? 0
                      : k.count > static_cast<int>(c.pointers.size()) ? static_cast<int>(c.pointers.size())
                                                                      : k.count;
    for (int i = 0; i < count; ++i)
      if (args[i] != nullptr) c.pointers[static_cast<std::size_t>(i)] = *static_cast<const void* const*>(args[i]);
    return;
  }
}

// Bytes of one element of a tensor map's type (the sub-byte packed types count as one).
std::size_t element_bytes(CUtensorMapDataType t) {
  switch (t) {
    case CU_TENSOR_MAP_DATA_TYPE_UINT16:
    case CU_TENSOR_MAP_DATA_TYPE_FLOAT16:
    case CU_TENSOR_MAP_DATA_TYPE_BFLOAT16: return 2;
    case CU_TENSOR_MAP_DATA_TYPE_UINT32:
    case CU_TENSOR_MAP_DATA_TYPE_INT32:
    case CU_TENSOR_MAP_DATA_TYPE_FLOAT32:
    case CU_TENSOR_MAP_DATA_TYPE_FLOAT32_FTZ:
    case CU_TENSOR_MAP_DATA_TYPE_TFLOAT32:
    case CU_TENSOR_MAP_DATA_TYPE_TFLOAT32_FTZ: return 4;
    case CU_TENSOR_MAP_DATA_TYPE_UINT64:
    case CU_TENSOR_MAP_DATA_TYPE_INT64:
    case CU_TENSOR_MAP_DATA_TYPE_FLOAT64: return 8;
    default: return 1;
  }
}

void tensor_map_encode(Call& c, const cuTensorMapEncodeTiled_params* a) {
  c.name = "cuTensorMapEncodeTiled";
  c.ptr = a->globalAddress;
  const unsigned rank = a->tensorRank < c.box.size() ? a->tensorRank : static_cast<unsigned>(c.box.size());
  std::size_t elements = rank > 0 && a->boxDim != nullptr ? 1 : 0;
  for (unsigned i = 0; i < rank && a->boxDim != nullptr; ++i) {
    c.box[i] = a->boxDim[i];
    elements *= a->boxDim[i];
  }
  c.bytes = elements * element_bytes(a->tensorDataType);
}

// The thread's last kept call, for its exit to find in O(1): a thread's runtime calls do not
// nest, so the exit that comes next on this thread is that call's.
thread_local std::uint32_t t_kept_id = 0;
thread_local std::size_t t_kept_index = 0;

void keep(Call c) {
  State& s = state();
  std::lock_guard<std::mutex> lock(s.mu);
  t_kept_id = 0;
  if (++s.counts[c.name] > kMaxListedPerName) {
    ++s.unlisted;
    return;
  }
  t_kept_id = c.correlation_id;
  t_kept_index = s.calls.size();
  s.calls.push_back(std::move(c));
}

std::uint64_t now_ns() {
  std::uint64_t t = 0;
  return cuptiGetTimestamp(&t) == CUPTI_SUCCESS ? t : 0;
}

// At a call's exit: when it returned, on the call's own entry (this thread's last kept call,
// where it is the same call; a call past the listing limit was not kept).
void returned(std::uint32_t correlation_id) {
  if (t_kept_id == 0 || t_kept_id != correlation_id) return;
  const std::uint64_t t = now_ns();
  State& s = state();
  std::lock_guard<std::mutex> lock(s.mu);
  if (t_kept_index < s.calls.size() && s.calls[t_kept_index].correlation_id == correlation_id)
    s.calls[t_kept_index].returned_ns = t;
  t_kept_id = 0;
}

void CUPTIAPI on_call(void*, CUpti_CallbackDomain domain, CUpti_CallbackId id, const void* data) {
  const auto* info = static_cast<const CUpti_CallbackData*>(data);
  if (info->callbackSite == CUPTI_API_EXIT) {
    returned(info->correlationId);
    return;
  }
  if (info->callbackSite != CUPTI_API_ENTER) return;
  Call c;
  c.name = info->functionName != nullptr ? info->functionName : "";
  c.thread = std::this_thread::get_id();
  c.correlation_id = info->correlationId;
  c.entered_ns = now_ns();
  const void* p = info->functionParams;
  if (domain == CUPTI_CB_DOMAIN_DRIVER_API) {
    if (id != CUPTI_DRIVER_TRACE_CBID_cuTensorMapEncodeTiled) return;
    tensor_map_encode(c, static_cast<const cuTensorMapEncodeTiled_params*>(p));
    keep(std::move(c));
    return;
  }
  if (domain != CUPTI_CB_DOMAIN_RUNTIME_API) {
    return;
  }
  switch (id) {
    case CUPTI_RUNTIME_TRACE_CBID_cudaStreamAttachMemAsync_v6000:
    case CUPTI_RUNTIME_TRACE_CBID_cudaStreamAttachMemAsync_ptsz_v7000: {
      const auto* a = static_cast<const cudaStreamAttachMemAsync_v6000_params*>(p);
      c.stream = a->stream;
      c.ptr = a->devPtr;
      c.bytes = a->length;
      c.flags = a->flags;
      break;
    }
    case CUPTI_RUNTIME_TRACE_CBID_cudaMemPrefetchAsync_v12020:
    case CUPTI_RUNTIME_TRACE_CBID_cudaMemPrefetchAsync_ptsz_v12020: {
      const auto* a = static_cast<const cudaMemPrefetchAsync_v12020_params*>(p);
      c.stream = a->stream;
      c.ptr = a->devPtr;
      c.bytes = a->count;
      c.location = a->location;
      break;
    }
    case CUPTI_RUNTIME_TRACE_CBID_cudaMemAdvise_v12020: {
      const auto* a = static_cast<const cudaMemAdvise_v12020_params*>(p);
      c.ptr = a->devPtr;
      c.bytes = a->count;
      c.advice = static_cast<int>(a->advice);
      c.location = a->location;
      break;
    }
    case CUPTI_RUNTIME_TRACE_CBID_cudaLaunchHostFunc_v10000:
    case CUPTI_RUNTIME_TRACE_CBID_cudaLaunchHostFunc_ptsz_v10000: {
      const auto* a = static_cast<const cudaLaunchHostFunc_v10000_params*>(p);
      c.stream = a->stream;
      c.ptr = a->userData;
      break;
    }
    case CUPTI_RUNTIME_TRACE_CBID_cudaStreamSynchronize_v3020:
    case CUPTI_RUNTIME_TRACE_CBID_cudaStreamSynchronize_ptsz_v7000:
      c.stream = static_cast<const cudaStreamSynchronize_v3020_params*>(p)->stream;
      break;
    case CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyAsync_v3020:
    case CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyAsync_ptsz_v7000: {
      const auto* a = static_cast<const cudaMemcpyAsync_v3020_params*>(p);
      c.ptr = a->dst;
      c.src = a->src;
      c.bytes = a->count;
      c.kind = static_cast<int>(a->kind);
      c.stream = a->stream;
      break;
    }
    case CUPTI_RUNTIME_TRACE_CBID_cudaStreamDestroy_v5050:
      c.stream = static_cast<const cudaStreamDestroy_v5050_params*>(p)->stream;
      break;
    case CUPTI_RUNTIME_TRACE_CBID_cudaFree_v3020: c.ptr = static_cast<const cudaFree_v3020_params*>(p)->devPtr; break;
    case CUPTI_RUNTIME_TRACE_CBID_cudaFreeHost_v3020:
      c.ptr = static_cast<const cudaFreeHost_v3020_params*>(p)->ptr;
      break;
    case CUPTI_RUNTIME_TRACE_CBID_cudaHostRegister_v4000: {
      const auto* a = static_cast<const cudaHostRegister_v4000_params*>(p);
      c.ptr = a->ptr;
      c.bytes = a->size;
      c.flags = a->flags;
      break;
    }
    case CUPTI_RUNTIME_TRACE_CBID_cudaHostUnregister_v4000:
      c.ptr = static_cast<const cudaHostUnregister_v4000_params*>(p)->ptr;
      break;
    case CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000:
    case CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_ptsz_v7000: {
      const auto* a = static_cast<const cudaLaunchKernel_v7000_params*>(p);
      c.stream = a->stream;
      c.func = a->func;
      kernel_launch(c, info->symbolName, a->args);
      break;
    }
    case CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernelExC_v11060:
    case CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernelExC_ptsz_v11060: {
      const auto* a = static_cast<const cudaLaunchKernelExC_v11060_params*>(p);
      if (a->config != nullptr) c.stream = a->config->stream;
      c.func = a->func;
      kernel_launch(c, info->symbolName, a->args);
      break;
    }
    default: break;
  }
  keep(std::move(c));
}

}  // namespace

std::vector<Call> Calls::named(const std::string& name) const {
  std::vector<Call> out;
  for (const auto& c : calls)
    if (c.name == name) out.push_back(c);
  return out;
}

Recorder::Recorder(std::vector<KernelPointers> pointers) {
  bool expected = false;
  if (!g_active.compare_exchange_strong(expected, true))
    throw std::logic_error("cml::api::Recorder: another one is still recording");
  active_ = true;
  State& s = state();
  {
    std::lock_guard<std::mutex> lock(s.mu);
    s.pointers = std::move(pointers);  // before the callback can run: it reads them unlocked
    s.calls.clear();
    s.counts.clear();
    s.unlisted = 0;
  }
  if (const CUptiResult r = cuptiSubscribe(&s.subscriber, on_call, nullptr); r != CUPTI_SUCCESS) {
    error_ = cupti_failure(r, "cuptiSubscribe");
    s.subscriber = nullptr;
    return;
  }
  CUptiResult r = cuptiEnableDomain(1, s.subscriber, CUPTI_CB_DOMAIN_RUNTIME_API);
  const char* what = "cuptiEnableDomain";
  if (r == CUPTI_SUCCESS) {
    r = cuptiEnableCallback(1, s.subscriber, CUPTI_CB_DOMAIN_DRIVER_API,
                            CUPTI_DRIVER_TRACE_CBID_cuTensorMapEncodeTiled);
    what = "cuptiEnableCallback (cuTensorMapEncodeTiled)";
  }
  if (r != CUPTI_SUCCESS) {
    error_ = cupti_failure(r, what);
    cuptiUnsubscribe(s.subscriber);
    s.subscriber = nullptr;
  }
}

Recorder::~Recorder() {
  if (active_) (void)stop();
}

Calls Recorder::stop() {
  Calls out;
  if (!active_) {
    out.error = "already stopped";
    return out;
  }
  active_ = false;
  State& s = state();
  if (s.subscriber != nullptr) {
    cuptiUnsubscribe(s.subscriber);
    s.subscriber = nullptr;
  }
  {
    std::lock_guard<std::mutex> lock(s.mu);
    out.calls = std::move(s.calls);
    out.counts = std::move(s.counts);
    out.not_listed = s.unlisted;
    s.calls.clear();
    s.counts.clear();
  }
  // A launch whose callback gave no kernel name is named now, outside the callback (no
  // CUDA call is made from inside one): the checks that find kernels by name still find it.
#if CUDART_VERSION >= 12030
  for (Call& c : out.calls)
    if (c.func != nullptr && c.symbol.empty()) {
      const char* name = nullptr;
      if (cudaFuncGetName(&name, c.func) == cudaSuccess && name != nullptr)
        c.symbol = name;
      else
        (void)cudaGetLastError();  // a failure here must not show as the next launch's error
    }
#endif
  out.error = error_;
  out.ok = error_.empty();
  g_active.store(false);
  return out;
}

std::vector<trace::HostRecord> long_calls(const Calls& calls, std::uint64_t min_ns) {
  std::vector<trace::HostRecord> out;
  for (const Call& c : calls.calls)
    if (c.name != kMark && c.entered_ns > 0 && c.returned_ns >= c.entered_ns + min_ns)
      out.push_back({c.name, {c.entered_ns, c.returned_ns}});
  return out;
}

void mark(const std::string& note) {
  if (!g_active.load()) return;
  Call c;
  c.name = kMark;
  c.thread = std::this_thread::get_id();
  c.symbol = note;
  State& s = state();
  std::lock_guard<std::mutex> lock(s.mu);
  ++s.counts[c.name];
  s.calls.push_back(std::move(c));
}

}  // namespace cml::api
