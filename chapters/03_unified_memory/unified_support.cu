// Chapter 03 — the parts the chapter provides: the round's kernels and host step, the
// round signal, the CPU reference and the per-thread loop. The learner does not edit it.
#include "unified.cuh"

#include "cml/errors.hpp"

#include <chrono>
#include <string>

namespace ch03 {

namespace {

__global__ void gpu_step(unsigned* __restrict__ data, std::size_t n, const unsigned* __restrict__ table,
                         std::size_t table_n, unsigned round, unsigned long long delay_ns) {
  if (delay_ns > 0) {
    // %globaltimer counts nanoseconds; every thread waits, so no element is written before
    // the delay has passed.
    unsigned long long start = 0, now = 0;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(start));
    do {
      asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(now));
    } while (now - start < delay_ns);
  }
  const std::size_t stride = static_cast<std::size_t>(gridDim.x) * blockDim.x;
  for (std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; i < n; i += stride)
    data[i] = data[i] * 5u + table[i % table_n] + round;
}

void launch(const Lane& lane, int round, unsigned long long delay_ns) {
  int sms = 0;
  CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, lane.device));
  const std::size_t needed = (lane.n + 255) / 256;
  const unsigned blocks = static_cast<unsigned>(needed < static_cast<std::size_t>(sms) * 8 ? needed : sms * 8);
  gpu_step<<<blocks == 0 ? 1 : blocks, 256, 0, lane.stream>>>(lane.data, lane.n, lane.table, lane.table_n,
                                                               static_cast<unsigned>(round), delay_ns);
  CUDA_CHECK_LAUNCH();
}

}  // namespace

void CUDART_CB RoundSignal::on_gpu_done(void* signal) {
  auto* self = static_cast<RoundSignal*>(signal);
  {
    std::lock_guard<std::mutex> lock(self->mu_);
    ++self->done_;
  }
  self->cv_.notify_all();
}

void RoundSignal::wait_for(int round, double timeout_s) {
  std::unique_lock<std::mutex> lock(mu_);
  const bool signalled = cv_.wait_for(lock, std::chrono::duration<double>(timeout_s), [&] { return done_ > round; });
  if (!signalled)
    throw cml::CheckFailed("round " + std::to_string(round) + " was never signalled (waited " +
                           std::to_string(timeout_s) + " s): enqueue RoundSignal::on_gpu_done with "
                           "cudaLaunchHostFunc in notify_when_done (step 3)");
}

int RoundSignal::done() const {
  std::lock_guard<std::mutex> lock(mu_);
  return done_;
}

void launch_gpu_step(const Lane& lane, int round) { launch(lane, round, 0); }

void launch_slow_gpu_step(const Lane& lane, int round, double delay_ms) {
  launch(lane, round, static_cast<unsigned long long>(delay_ms * 1e6));
}

void host_step(const Lane& lane, int round) {
  const unsigned key = static_cast<unsigned>(round + 1) * 0x9E3779B9u;
  for (std::size_t i = 0; i < lane.n; ++i) lane.data[i] ^= key;
}

void reference_rounds(unsigned* data, std::size_t n, const unsigned* table, std::size_t table_n, int rounds) {
  for (int r = 0; r < rounds; ++r) {
    const unsigned key = static_cast<unsigned>(r + 1) * 0x9E3779B9u;
    for (std::size_t i = 0; i < n; ++i) data[i] = (data[i] * 5u + table[i % table_n] + static_cast<unsigned>(r)) ^ key;
  }
}

void run_lane(const Lane& lane, int rounds, RoundSignal& signal) {
  attach(lane);
  advise(lane);
  for (int r = 0; r < rounds; ++r) {
    prefetch_to_gpu(lane);
    launch_gpu_step(lane, r);
    prefetch_to_cpu(lane);
    notify_when_done(lane, signal);
    wait_for_gpu(lane, signal, r);
    host_step(lane, r);
  }
}

}  // namespace ch03
