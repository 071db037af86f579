// Chapter 03 — unified memory with streams: the API that exercise.cu implements (the
// learner's part, steps 1-4) and what the chapter provides around it. main.cu, the tests
// and the solution all include this file.
#pragma once

#include <cuda_runtime_api.h>

#include <condition_variable>
#include <cstddef>
#include <mutex>
#include <vector>

namespace ch03 {

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

// What the chapter's own code saw of a lane's rounds, for the program and the tests: the
// provided launch_gpu_step and host_step report here (Lane::progress; null: nothing kept).
// finished_round is written by the GPU itself (mapped pinned memory) when a round's kernel
// has finished, so a host step that starts before that is seen, whatever the data holds.
struct Progress {
  volatile unsigned* finished_round = nullptr;  // rounds whose kernel finished (the GPU writes it; may be null)
  unsigned* blocks_done = nullptr;              // device memory: the kernel's own count of blocks
  std::mutex mu;
  std::vector<int> host_steps;   // the rounds of host_step's calls, in call order
  std::vector<int> early_steps;  // host steps that began before their kernel finished
  int launches = 0;              // launch_gpu_step calls
  double delays_ms = 0;          // the GPU's waits of all launches, summed
  double max_delay_ms = 0;       // > 0: each kernel first waits 0.25 to 1 x this, at random
  double fixed_delay_ms = 0;     // > 0: each kernel first waits this long
};

// One host thread's share of the work: its own stream and its own managed buffer, plus a
// lookup table (managed, shared by every lane) that kernels and the host only read.
struct Lane {
  unsigned* data = nullptr;  // n words, from cudaMallocManaged (cudaMemAttachGlobal)
  std::size_t n = 0;
  const unsigned* table = nullptr;  // table_n words, from cudaMallocManaged, shared by every lane
  std::size_t table_n = 0;
  cudaStream_t stream = nullptr;  // this lane's own (non-blocking) stream
  int device = 0;
  Progress* progress = nullptr;  // the chapter's bookkeeping; not the learner's business
};

// ---- Provided by the chapter (provided.cu) --------------------------------------------------

// The GPU's step of a round, enqueued on lane.stream: data[i] = data[i] * 5 +
// table[i % table_n] + round. Returns at once (a kernel launch does not wait).
void launch_gpu_step(const Lane& lane, int round);
// The host's step of a round, on this thread: data[i] ^= (round + 1) * 0x9E3779B9.
void host_step(const Lane& lane, int round);
// What data must hold after `rounds` rounds, computed on the CPU from `initial`.
void reference_rounds(unsigned* data, std::size_t n, const unsigned* table, std::size_t table_n, int rounds);

// ---- The learner's part (exercise.cu) -------------------------------------------------------

// Steps 1-4. One lane's whole life, on the calling host thread: `rounds` rounds, each the
// GPU's step (launch_gpu_step) then the host's step (host_step), in round order, with the
// right result. Several threads run their lanes at once, each with its own lane. It
//  - lets the host touch lane.data only once the GPU's work on it is finished (step 1);
//  - makes lane.data the business of lane.stream alone (step 2);
//  - learns that a round's GPU work is finished from a host function enqueued on
//    lane.stream, which signals `signal` once per round, in order; the thread then waits
//    with signal.wait_for(round): it makes no blocking CUDA call (no synchronise, no polling
//    query), does not spin and does not sleep (step 3);
//  - moves lane.data to the GPU ahead of each kernel and back ahead of each host step, in
//    lane.stream's order: the move back is enqueued before the round's host function, so
//    it is done when the host is told it may touch the data.
//    Where the device lacks concurrentManagedAccess, prefetch to it is not possible:
//    run_lane must then still work (step 4). The shared table is not the lane's to advise:
//    its owner did that once, with advise_table, before any lane started.
void run_lane(const Lane& lane, int rounds, RoundSignal& signal);

// Step 4. Enqueue on lane.stream the move of all of lane.data to lane's GPU (to_gpu) or to
// the host (to_cpu). Only enqueue: neither blocks the host. Need concurrentManagedAccess.
void prefetch_to_gpu(const Lane& lane);
void prefetch_to_cpu(const Lane& lane);

// Step 4. Advise the table (table_n words of managed memory, read by every lane's kernels
// and by the host, written by none) for what it is, all of it. Called once, by the table's
// owner, where the table is created and before any lane starts (the program and the tests
// do), on the owner's thread. Advice to `device` needs concurrentManagedAccess: without it,
// do nothing.
void advise_table(const unsigned* table, std::size_t table_n, int device);

}  // namespace ch03
