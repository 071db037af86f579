// Chapter 08 — what the chapter provides: register staging as a kernel of its own (what
// the pipelines are timed against), and the shared-memory scrub the checks run before each
// launch.
#include "device.cuh"

#include "cml/errors.hpp"
#include "cml/scrub.hpp"

namespace ch08 {

__global__ void __launch_bounds__(kThreads) sum_sync_kernel(const Job job) { sum_through_registers(job); }

void sum_sync(const Job& job, cudaStream_t stream) {
  sum_sync_kernel<<<job.blocks, kThreads, 0, stream>>>(job);
  CUDA_CHECK_LAUNCH();
}

// Garbage (no word of the inputs' pattern) over every SM's shared memory: cml/scrub.hpp.
void scrub_shared_memory(cudaStream_t stream) { cml::scrub_shared_memory(stream, 0xBADC0FFEu); }

}  // namespace ch08
