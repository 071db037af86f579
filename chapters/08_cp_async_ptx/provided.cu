// Chapter 08 — what the chapter provides: register staging as a kernel of its own (what
// the pipelines are timed against), and the shared-memory scrub the checks run before each
// launch.
#include "device.cuh"

#include "cml/errors.hpp"

#include <cstddef>
#include <utility>

namespace ch08 {

__global__ void __launch_bounds__(kThreads) sum_sync_kernel(const Job job) { sum_through_registers(job); }

void sum_sync(const Job& job, cudaStream_t stream) {
  sum_sync_kernel<<<job.blocks, kThreads, 0, stream>>>(job);
  CUDA_CHECK_LAUNCH();
}

namespace {

// Every thread writes garbage over its share of the block's dynamic shared memory. Through
// a volatile pointer: stores nobody reads would otherwise be dropped.
__global__ void scrub_shared_kernel(int words) {
  extern __shared__ Word junk[];
  volatile Word* const v = junk;
  for (int i = static_cast<int>(threadIdx.x); i < words; i += static_cast<int>(blockDim.x)) v[i] = 0xBADC0FFEu ^ i;
}

}  // namespace

// Blocks as large as a block may be (the opt-in maximum), two per SM's worth. The scheduler
// promises no placement, so this does not guarantee that every SM gets one; in practice
// blocks of this size spread one or two per SM, and each covers all of its SM's shared
// memory but the 1 KiB reserved per block.
void scrub_shared_memory(cudaStream_t stream) {
  static const auto shape = [] {
    int device = 0, sms = 0, bytes = 0;
    CUDA_CHECK(cudaGetDevice(&device));
    CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device));
    CUDA_CHECK(cudaDeviceGetAttribute(&bytes, cudaDevAttrMaxSharedMemoryPerBlockOptin, device));
    CUDA_CHECK(cudaFuncSetAttribute(scrub_shared_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, bytes));
    return std::pair<int, int>(2 * sms, bytes);
  }();
  scrub_shared_kernel<<<shape.first, 1024, static_cast<std::size_t>(shape.second), stream>>>(
      shape.second / static_cast<int>(sizeof(Word)));
  CUDA_CHECK_LAUNCH();
}

}  // namespace ch08
