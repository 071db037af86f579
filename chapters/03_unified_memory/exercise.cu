// Chapter 03 — unified memory with streams. THE file you edit: four steps, TODO(1) to
// TODO(4). Several host threads each run rounds of "kernel, then host step" on their own
// managed buffer (run_lane in unified_support.cu calls the functions below in that order).
// As shipped, the host does not wait for the GPU at all: its results are wrong.
//
//   ./lab run 03                 run the threads, and compare migration strategies
//   ./lab check 03               the chapter's tests: which steps pass, and why not
//   ./lab hint 03                one more hint (chapters/03_unified_memory/hints.md)
//
// Every function is declared, with what it must do, in unified.cuh.
#include "unified.cuh"

#include "cml/errors.hpp"

namespace ch03 {

// TODO(1): the host must not read or write lane.data until the round's kernel finished:
// managed memory is coherent, but nothing orders the CPU after the GPU except an explicit
// synchronisation (cudaStreamSynchronize(lane.stream), cudaEventSynchronize, ...).
// TODO(3): then replace the blocking call with signal.wait_for(round), which returns once
// the host function enqueued by notify_when_done has run.
void wait_for_gpu([[maybe_unused]] const Lane& lane, [[maybe_unused]] RoundSignal& signal,
                  [[maybe_unused]] int round) {}

// TODO(2): attach lane.data to lane.stream alone (cudaStreamAttachMemAsync with
// cudaMemAttachSingle): only this stream's kernels use it, so the host may touch it while
// other threads' kernels run, also on GPUs without concurrentManagedAccess.
void attach([[maybe_unused]] const Lane& lane) {}

// TODO(3): enqueue RoundSignal::on_gpu_done on lane.stream with cudaLaunchHostFunc, with
// &signal as its user data: the driver calls it when the work before it has finished.
void notify_when_done([[maybe_unused]] const Lane& lane, [[maybe_unused]] RoundSignal& signal) {}

// TODO(4): without prefetching, the kernel's first touch of each page faults and migrates
// it on demand, and the host's first touch faults it back. Prefetch lane.data to the GPU
// before the kernel and to the CPU after it (cudaMemPrefetchAsync with a cudaMemLocation,
// on lane.stream), and give the table, which everybody reads and nobody writes, the advice
// that fits it (cudaMemAdvise).
void advise([[maybe_unused]] const Lane& lane) {}

void prefetch_to_gpu([[maybe_unused]] const Lane& lane) {}

void prefetch_to_cpu([[maybe_unused]] const Lane& lane) {}

}  // namespace ch03
