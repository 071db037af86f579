// See cml/device.hpp (limit_sms): a green context over some of the GPU's SMs, made current
// for the calling thread, so that the kernels it launches run on those SMs alone. The
// driver's functions are reached through the runtime's lookup of driver entry points: the
// course links the runtime only.
#include "cml/device.hpp"

#include "cml/driver.hpp"
#include "cml/errors.hpp"

#include <cuda.h>
#include <cudaTypedefs.h>
#include <cuda_runtime_api.h>

#include <mutex>
#include <string>
#include <unordered_map>

namespace cml {

namespace {

template <typename Fn>
Fn required(const char* name, int version) {
  const auto fn = driver_function<Fn>(name, version);
  if (fn == nullptr)
    throw UsageError(std::string("CML_SM_LIMIT: the driver has no ") + name +
                     " (green contexts need a CUDA 12.4 driver)");
  return fn;
}

void check(CUresult r, const char* what) {
  if (r != CUDA_SUCCESS)
    throw UsageError(std::string("CML_SM_LIMIT: ") + what + " failed (CUresult " + std::to_string(r) + ")");
}

// The green context limit_sms made for each device, for the threads that enter it later.
std::mutex limited_mutex;
std::unordered_map<int, CUcontext> limited_contexts;
std::unordered_map<int, int> limited_sm_counts;

}  // namespace

int usable_sm_count(int index) {
  {
    const std::lock_guard<std::mutex> lock(limited_mutex);
    if (const auto it = limited_sm_counts.find(index); it != limited_sm_counts.end()) return it->second;
  }
  int sms = 0;
  CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, index));
  return sms;
}

int usable_sm_count() {
  int device = 0;
  CUDA_CHECK(cudaGetDevice(&device));
  return usable_sm_count(device);
}

void enter_device(int index) {
  CUDA_CHECK(cudaSetDevice(index));
  CUcontext ctx = nullptr;
  {
    const std::lock_guard<std::mutex> lock(limited_mutex);
    if (const auto it = limited_contexts.find(index); it != limited_contexts.end()) ctx = it->second;
  }
  if (ctx == nullptr) return;
  const auto make_current = required<PFN_cuCtxSetCurrent_v4000>("cuCtxSetCurrent", 4000);
  check(make_current(ctx), "cuCtxSetCurrent");
}

int limit_sms(int index, int sms) {
  const auto get_resource = required<PFN_cuDeviceGetDevResource_v12040>("cuDeviceGetDevResource", 12040);
  const auto split = required<PFN_cuDevSmResourceSplitByCount_v12040>("cuDevSmResourceSplitByCount", 12040);
  const auto describe_resources = required<PFN_cuDevResourceGenerateDesc_v12040>("cuDevResourceGenerateDesc", 12040);
  const auto create = required<PFN_cuGreenCtxCreate_v12040>("cuGreenCtxCreate", 12040);
  const auto as_context = required<PFN_cuCtxFromGreenCtx_v12040>("cuCtxFromGreenCtx", 12040);
  const auto make_current = required<PFN_cuCtxSetCurrent_v4000>("cuCtxSetCurrent", 4000);

  CUdevResource all{};
  check(get_resource(static_cast<CUdevice>(index), &all, CU_DEV_RESOURCE_TYPE_SM), "cuDeviceGetDevResource");
  if (sms <= 0 || static_cast<unsigned>(sms) > all.sm.smCount)
    throw UsageError("CML_SM_LIMIT=" + std::to_string(sms) + ": want 1 to " + std::to_string(all.sm.smCount) +
                     " SMs (this GPU's)");
  CUdevResource part{}, rest{};
  unsigned groups = 1;
  // One group of at least `sms` SMs (the driver rounds up to its partition granularity:
  // 8 SMs on sm_90).
  check(split(&part, &groups, &all, &rest, 0, static_cast<unsigned>(sms)), "cuDevSmResourceSplitByCount");
  if (groups < 1)
    throw UsageError("CML_SM_LIMIT=" + std::to_string(sms) + ": the driver made no partition of that size");
  CUdevResourceDesc desc{};
  check(describe_resources(&desc, &part, 1), "cuDevResourceGenerateDesc");
  CUgreenCtx green{};
  check(create(&green, desc, static_cast<CUdevice>(index), CU_GREEN_CTX_DEFAULT_STREAM), "cuGreenCtxCreate");
  CUcontext ctx{};
  check(as_context(&ctx, green), "cuCtxFromGreenCtx");
  check(make_current(ctx), "cuCtxSetCurrent");
  {
    const std::lock_guard<std::mutex> lock(limited_mutex);
    limited_contexts[index] = ctx;
    limited_sm_counts[index] = static_cast<int>(part.sm.smCount);
  }
  return static_cast<int>(part.sm.smCount);  // the green context lives as long as the process
}

}  // namespace cml
