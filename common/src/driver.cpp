// See cml/driver.hpp.
#include "cml/driver.hpp"

#include <cuda_runtime_api.h>

namespace cml {

void* driver_entry_point(const char* name, int version) noexcept {
  void* p = nullptr;
  cudaDriverEntryPointQueryResult found{};
#if CUDART_VERSION >= 12050
  const cudaError_t e = cudaGetDriverEntryPointByVersion(name, &p, version, cudaEnableDefault, &found);
#else
  (void)version;
  const cudaError_t e = cudaGetDriverEntryPoint(name, &p, cudaEnableDefault, &found);
#endif
  if (e != cudaSuccess || found != cudaDriverEntryPointSuccess) return nullptr;
  return p;
}

}  // namespace cml
