// Chapter 03 — unified memory with streams: the API that exercise.cu implements (the
// learner's part, steps 1-4) and what the chapter provides around it. main.cu, the tests
// and the solution all include this file.
#pragma once

#include <cuda_runtime_api.h>

#include <condition_variable>
#include <cstddef>
#include <mutex>

namespace ch03 {

// One host thread's share of the work: its own stream and its own managed buffer, plus a
// lookup table (managed, shared by every lane) that kernels and the host only read.
struct Lane {
  unsigned* data = nullptr;   // n words, from cudaMallocManaged
  std::size_t n = 0;
  const unsigned* table = nullptr;  // table_n words, from cudaMallocManaged, shared
  std::size_t table_n = 0;
  cudaStream_t stream = nullptr;
  int device = 0;
};

// Counts rounds whose GPU work has finished, for a host thread to wait on. on_gpu_done is
// a host function for cudaLaunchHostFunc: userData is the RoundSignal.
class RoundSignal {
 public:
  static void CUDART_CB on_gpu_done(void* signal);
  // Blocks until round `round` (0, 1, ...) was signalled. Throws cml::CheckFailed after
  // `timeout_s` seconds: a round that is never signalled must not hang the program.
  void wait_for(int round, double timeout_s = 10.0);
  int done() const;

 private:
  mutable std::mutex mu_;
  std::condition_variable cv_;
  int done_ = 0;
};

// ---- Step 1: explicit synchronisation --------------------------------------------------
// Returns when the GPU work of `round` on lane.stream has finished, so the host may use
// lane.data. (Step 3 changes how.)
void wait_for_gpu(const Lane& lane, RoundSignal& signal, int round);

// ---- Step 2: attach each thread's buffer to its own stream ------------------------------
void attach(const Lane& lane);

// ---- Step 3: a host callback instead of a blocking wait ----------------------------------
// Enqueue on lane.stream what signals `signal` when the work before it has finished.
void notify_when_done(const Lane& lane, RoundSignal& signal);

// ---- Step 4: prefetch and advice -----------------------------------------------------------
void advise(const Lane& lane);           // once, before the rounds
void prefetch_to_gpu(const Lane& lane);  // before each round's kernel, on lane.stream
void prefetch_to_cpu(const Lane& lane);  // after it, before the host's step, on lane.stream

// ---- Provided by the chapter (unified_support.cu) ------------------------------------------

// The GPU's step of a round: data[i] = data[i] * 5 + table[i % table_n] + round.
void launch_gpu_step(const Lane& lane, int round);
// The same, but every thread first waits `delay_ms` on the GPU's clock: a kernel that is
// certainly still running when the host looks too early.
void launch_slow_gpu_step(const Lane& lane, int round, double delay_ms);
// The host's step of a round: data[i] ^= (round + 1) * 0x9E3779B9.
void host_step(const Lane& lane, int round);
// What data must hold after `rounds` rounds, computed on the CPU from `initial`.
void reference_rounds(unsigned* data, std::size_t n, const unsigned* table, std::size_t table_n, int rounds);

// One lane's whole life: attach, advise, then per round: prefetch to the GPU, kernel,
// prefetch to the CPU, notify, wait, host step. It calls the learner's functions above.
void run_lane(const Lane& lane, int rounds, RoundSignal& signal);

}  // namespace ch03
