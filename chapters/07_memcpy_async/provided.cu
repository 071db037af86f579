// Chapter 07 — what the chapter provides: the register-staged kernel (variant a) every
// step starts from. The ceiling the variants are measured against, the read-only kernel,
// is chapter 08's too: cml/tile_sum.cuh.
#include "memcpy_async.cuh"

#include "cml/errors.hpp"

namespace ch07 {

__global__ void __launch_bounds__(kThreads) sum_sync_kernel(const Job job) { sum_through_registers(job); }

void sum_sync(const Job& job, cudaStream_t stream) {
  sum_sync_kernel<<<job.blocks, kThreads, 0, stream>>>(job);
  CUDA_CHECK_LAUNCH();
}

}  // namespace ch07
