// cml/l2_persist.hpp: the persisting L2 set-aside, restored on scope exit.
#include "cml/l2_persist.hpp"

#include "cml/errors.hpp"

#include <cuda_runtime.h>

namespace cml {

PersistLimits persist_limits(int device) {
  int persisting = 0, window = 0;
  CUDA_CHECK(cudaDeviceGetAttribute(&persisting, cudaDevAttrMaxPersistingL2CacheSize, device));
  CUDA_CHECK(cudaDeviceGetAttribute(&window, cudaDevAttrMaxAccessPolicyWindowSize, device));
  return {static_cast<std::size_t>(persisting), static_cast<std::size_t>(window)};
}

PersistingCarveOut::PersistingCarveOut(std::size_t bytes) {
  if (!attempt(cudaDeviceGetLimit(&previous_, cudaLimitPersistingL2CacheSize), "cudaDeviceGetLimit")) return;
  set_ = attempt(cudaDeviceSetLimit(cudaLimitPersistingL2CacheSize, bytes), "cudaDeviceSetLimit");
  if (set_) CUDA_CHECK(cudaDeviceGetLimit(&granted_, cudaLimitPersistingL2CacheSize));  // the driver may round
}

PersistingCarveOut::~PersistingCarveOut() {
  if (!set_) return;
  detail::warn_on_error(cudaCtxResetPersistingL2Cache(), "cudaCtxResetPersistingL2Cache");
  detail::warn_on_error(cudaDeviceSetLimit(cudaLimitPersistingL2CacheSize, previous_),
                        "restoring cudaLimitPersistingL2CacheSize");
}

bool PersistingCarveOut::attempt(cudaError_t e, const char* call) {
  if (e == cudaSuccess) return true;
  why_not_ = std::string(call) + "(cudaLimitPersistingL2CacheSize) failed: " + cudaGetErrorString(e);
  (void)cudaGetLastError();  // not a sticky error: the rest of the program goes on
  return false;
}

}  // namespace cml
