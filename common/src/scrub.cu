// cml/scrub.hpp: shared memory filled with a known word before a checked run.
#include "cml/scrub.hpp"

#include "cml/device.hpp"
#include "cml/errors.hpp"

#include <cstddef>
#include <utility>

namespace cml {

namespace {

// Every thread writes `word` ^ i into word i of the block's dynamic shared memory, through
// a volatile pointer: stores nobody reads would otherwise be dropped.
__global__ void scrub_shared_kernel(int words, unsigned word) {
  extern __shared__ unsigned junk[];
  volatile unsigned* const v = junk;
  for (int i = static_cast<int>(threadIdx.x); i < words; i += static_cast<int>(blockDim.x))
    v[i] = word ^ static_cast<unsigned>(i);
}

}  // namespace

void scrub_shared_memory(cudaStream_t stream, unsigned word) {
  static const auto shape = [] {
    int device = 0, bytes = 0;
    CUDA_CHECK(cudaGetDevice(&device));
    const int sms = usable_sm_count(device);
    CUDA_CHECK(cudaDeviceGetAttribute(&bytes, cudaDevAttrMaxSharedMemoryPerBlockOptin, device));
    CUDA_CHECK(cudaFuncSetAttribute(scrub_shared_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, bytes));
    return std::pair<int, int>(2 * sms, bytes);
  }();
  scrub_shared_kernel<<<shape.first, 1024, static_cast<std::size_t>(shape.second), stream>>>(
      shape.second / static_cast<int>(sizeof(unsigned)), word);
  CUDA_CHECK_LAUNCH();
}

}  // namespace cml
