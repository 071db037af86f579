// Chapter 03 — what the chapter provides around run_lane (declared in unified_memory.cuh):
// the round's kernel and host step, the round signal and the CPU reference. Read it; you do
// not edit it.
#include "unified_memory.cuh"

#include "cml/api_trace.hpp"
#include "cml/device.hpp"
#include "cml/errors.hpp"

#include <chrono>
#include <random>
#include <string>

namespace ch03 {

namespace {

__global__ void gpu_step(unsigned* __restrict__ data, std::size_t n, const unsigned* __restrict__ table,
                         std::size_t table_n, unsigned round, unsigned long long delay_ns,
                         volatile unsigned* finished_round, unsigned* blocks_done) {
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
  if (finished_round == nullptr || blocks_done == nullptr) return;
  // The last block to finish says so, in host memory: every block's writes are made
  // visible first (fence), then counted; the last one resets the count for the next round.
  __syncthreads();
  if (threadIdx.x == 0) {
    __threadfence_system();
    if (atomicAdd(blocks_done, 1u) == gridDim.x - 1) {
      *blocks_done = 0;
      __threadfence_system();
      *finished_round = round + 1;
      __threadfence_system();
    }
  }
}

void launch(const Lane& lane, int round) {
  unsigned long long delay_ns = 0;
  volatile unsigned* finished = nullptr;
  unsigned* blocks_done = nullptr;
  if (Progress* p = lane.progress) {
    std::lock_guard<std::mutex> lock(p->mu);
    ++p->launches;
    if (p->max_delay_ms > 0) {
      // A random wait, so that no fixed pause of the host matches it.
      thread_local std::minstd_rand rng(std::random_device{}());
      const double ms = p->max_delay_ms * std::uniform_real_distribution<double>(0.25, 1.0)(rng);
      p->delays_ms += ms;
      delay_ns = static_cast<unsigned long long>(ms * 1e6);
    } else if (p->fixed_delay_ms > 0) {
      p->delays_ms += p->fixed_delay_ms;
      delay_ns = static_cast<unsigned long long>(p->fixed_delay_ms * 1e6);
    }
    finished = p->finished_round;
    blocks_done = p->blocks_done;
  }
  const int sms = cml::usable_sm_count(lane.device);
  std::size_t cap = static_cast<std::size_t>(sms) * 8;
  if (delay_ns > 0) {
    // Every block resident at once, so that the kernel waits delay_ns once, not once per
    // wave of blocks: the tests compare the host's wait with the delays they asked for.
    int per_sm = 0;
    CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, gpu_step, 256, 0));
    if (per_sm > 0 && static_cast<std::size_t>(per_sm) * sms < cap) cap = static_cast<std::size_t>(per_sm) * sms;
  }
  const std::size_t needed = (lane.n + 255) / 256;
  const unsigned blocks = static_cast<unsigned>(needed < cap ? needed : cap);
  gpu_step<<<blocks == 0 ? 1 : blocks, 256, 0, lane.stream>>>(
      lane.data, lane.n, lane.table, lane.table_n, static_cast<unsigned>(round), delay_ns, finished, blocks_done);
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
    throw cml::CheckFailed(
        "round " + std::to_string(round) + " was never signalled (waited " + std::to_string(timeout_s) +
        " s; the signal counted " + std::to_string(done_) +
        " round(s)): wait_for(r) returns once round r's host function has run — enqueue "
        "RoundSignal::on_gpu_done with cudaLaunchHostFunc on the lane's stream, once per round, "
        "after the round's GPU work and before waiting for that round; rounds count from 0 (step 3)");
}

int RoundSignal::done() const {
  std::lock_guard<std::mutex> lock(mu_);
  return done_;
}

void launch_gpu_step(const Lane& lane, int round) { launch(lane, round); }

void host_step(const Lane& lane, int round) {
  // Its start and end go among the CUDA calls a recorder sees (the thread it ran on, and
  // which calls came while it ran: the tests' business); nothing when none records.
  cml::api::mark("host_step begin " + std::to_string(round));
  if (Progress* p = lane.progress) {
    // Read before the data is touched: was this round's kernel finished when the host began?
    const bool early = p->finished_round != nullptr && *p->finished_round < static_cast<unsigned>(round) + 1;
    std::lock_guard<std::mutex> lock(p->mu);
    p->host_steps.push_back(round);
    if (early) p->early_steps.push_back(round);
  }
  const unsigned key = static_cast<unsigned>(round + 1) * 0x9E3779B9u;
  for (std::size_t i = 0; i < lane.n; ++i) lane.data[i] ^= key;
  cml::api::mark("host_step end " + std::to_string(round));
}

void reference_rounds(unsigned* data, std::size_t n, const unsigned* table, std::size_t table_n, int rounds) {
  for (int r = 0; r < rounds; ++r) {
    const unsigned key = static_cast<unsigned>(r + 1) * 0x9E3779B9u;
    for (std::size_t i = 0; i < n; ++i) data[i] = (data[i] * 5u + table[i % table_n] + static_cast<unsigned>(r)) ^ key;
  }
}

}  // namespace ch03
