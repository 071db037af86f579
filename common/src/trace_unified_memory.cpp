// Unified-memory counters for the trace: configured before recording, primed once per
// process, and settled before stop() collects them. See trace_internal.hpp.
#include "trace_internal.hpp"

#include "cml/errors.hpp"
#include "cupti_error.hpp"

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace cml::trace::detail {

std::string enable_unified_memory() {
  struct Wanted {
    CUpti_ActivityUnifiedMemoryCounterKind kind;
    const char* name;
    bool core;
  };
  const Wanted wanted[] = {
      {CUPTI_ACTIVITY_UNIFIED_MEMORY_COUNTER_KIND_BYTES_TRANSFER_HTOD, "BYTES_TRANSFER_HTOD", true},
      {CUPTI_ACTIVITY_UNIFIED_MEMORY_COUNTER_KIND_BYTES_TRANSFER_DTOH, "BYTES_TRANSFER_DTOH", true},
      {CUPTI_ACTIVITY_UNIFIED_MEMORY_COUNTER_KIND_CPU_PAGE_FAULT_COUNT, "CPU_PAGE_FAULT_COUNT", true},
      {CUPTI_ACTIVITY_UNIFIED_MEMORY_COUNTER_KIND_GPU_PAGE_FAULT, "GPU_PAGE_FAULT", true},
      {CUPTI_ACTIVITY_UNIFIED_MEMORY_COUNTER_KIND_THRASHING, "THRASHING", false},
      {CUPTI_ACTIVITY_UNIFIED_MEMORY_COUNTER_KIND_THROTTLING, "THROTTLING", false},
      {CUPTI_ACTIVITY_UNIFIED_MEMORY_COUNTER_KIND_REMOTE_MAP, "REMOTE_MAP", false},
      {CUPTI_ACTIVITY_UNIFIED_MEMORY_COUNTER_KIND_BYTES_TRANSFER_DTOD, "BYTES_TRANSFER_DTOD", false},
  };
  int device = 0;
  CUDA_CHECK(cudaGetDevice(&device));
  auto config_of = [device](CUpti_ActivityUnifiedMemoryCounterKind kind) {
    CUpti_ActivityUnifiedMemoryCounterConfig c{};
    // Scope and device are deprecated since CUDA 7 (counters are per process), but CUPTI
    // still validates them.
    c.scope = CUPTI_ACTIVITY_UNIFIED_MEMORY_COUNTER_SCOPE_PROCESS_SINGLE_DEVICE;
    c.kind = kind;
    c.deviceId = static_cast<uint32_t>(device);
    c.enable = 1;
    return c;
  };

  std::vector<CUpti_ActivityUnifiedMemoryCounterConfig> all;
  for (const Wanted& w : wanted) all.push_back(config_of(w.kind));
  std::string err;
  if (cuptiActivityConfigureUnifiedMemoryCounter(all.data(), static_cast<uint32_t>(all.size())) != CUPTI_SUCCESS) {
    for (const Wanted& w : wanted) {
      CUpti_ActivityUnifiedMemoryCounterConfig one = config_of(w.kind);
      const CUptiResult r = cuptiActivityConfigureUnifiedMemoryCounter(&one, 1);
      if (r != CUPTI_SUCCESS && w.core)
        add_problem(err, cupti_failure(r, (std::string("unified-memory counter ") + w.name).c_str()));
    }
  }
  add_problem(err, enable(CUPTI_ACTIVITY_KIND_UNIFIED_MEMORY_COUNTER));
  return err;
}

void settle_unified_records() {
  std::size_t last = static_cast<std::size_t>(-1);
  int still = 0;
  for (int i = 0; i < 100 && still < 3; ++i) {
    cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
    std::size_t now = 0;
    {
      Store& s = store();
      std::lock_guard<std::mutex> lock(s.mu);
      now = s.records.unified.size();
    }
    still = (now == last) ? still + 1 : 0;
    last = now;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
}

void prime_unified_memory_once() {
  static bool primed = false;
  if (primed) return;
  primed = true;
  int device = 0, managed = 0;
  CUDA_CHECK(cudaGetDevice(&device));
  CUDA_CHECK(cudaDeviceGetAttribute(&managed, cudaDevAttrManagedMemory, device));
  if (!managed) return;
  void* p = nullptr;
  const std::size_t bytes = std::size_t{2} << 20;
  CUDA_CHECK(cudaMallocManaged(&p, bytes));
  std::memset(p, 1, bytes);
  cudaMemLocation gpu{};
  gpu.type = cudaMemLocationTypeDevice;
  gpu.id = device;
  cudaMemLocation host{};
  host.type = cudaMemLocationTypeHost;
  CUDA_CHECK(cudaMemPrefetchAsync(p, bytes, gpu, 0, nullptr));
  CUDA_CHECK(cudaMemPrefetchAsync(p, bytes, host, 0, nullptr));
  CUDA_CHECK(cudaDeviceSynchronize());
  CUDA_CHECK(cudaFree(p));
  settle_unified_records();
  Store& s = store();
  std::lock_guard<std::mutex> lock(s.mu);
  s.records = Trace{};
}

}  // namespace cml::trace::detail
