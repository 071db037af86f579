// Chapter 03 — unified memory with streams. THE file you edit: four steps, TODO(1) to
// TODO(4). Several host threads each run one lane: rounds of "the GPU's step, then the
// host's step" on the lane's own managed buffer and stream. You write that round. As
// shipped, run_lane does nothing: no thread's data changes.
//
//   ./lab run 03                 run the threads, and compare migration strategies
//   ./lab check 03               the chapter's tests: which steps pass, and why not
//   ./lab hint 03                one more hint (chapters/03_unified_memory/hints.md)
//
// Every function is declared, with what it must do, in unified_memory.cuh.
#include "unified_memory.cuh"

#include "cml/errors.hpp"

namespace ch03 {

// TODO(4): move all of lane.data to the GPU (prefetch_to_gpu) or to the host
// (prefetch_to_cpu) ahead of its use, in lane.stream's order, without blocking the host.
// These moves are only possible on a device with concurrentManagedAccess.
void prefetch_to_gpu([[maybe_unused]] const Lane& lane) {}

void prefetch_to_cpu([[maybe_unused]] const Lane& lane) {}

// TODO(4): the shared table (table_n words, read by every lane's kernels and by the host,
// written by none): every reader should be able to keep a copy of its own, so that no read
// moves the table's pages back and forth. Set that up once, for the whole table: the
// table's owner calls this where the table is made, before any lane starts. Where the
// device lacks concurrentManagedAccess, skip it.
void advise_table([[maybe_unused]] const unsigned* table, [[maybe_unused]] std::size_t table_n,
                  [[maybe_unused]] int device) {}

// One lane's life: `rounds` rounds, each the GPU's step (launch_gpu_step(lane, r)) then the
// host's step (host_step(lane, r)), on this thread. The provided functions are in
// unified_memory.cuh.
// TODO(1): write the rounds. The host may not touch lane.data while the GPU's work on it
// may still run: a kernel launch returns at once, and nothing else orders the CPU after the
// GPU. Other threads' lanes run at the same time: stop this lane only, not the device.
// TODO(2): lane.data is this lane's business alone: make sure the driver knows that only
// lane.stream's work uses it (so the host may touch it while other lanes' kernels run, even
// on GPUs without concurrentManagedAccess). Decide where that belongs in the lane's life.
// TODO(3): the thread must learn that a round's GPU work is done from the stream itself,
// through `signal` (RoundSignal in unified_memory.cuh), and wait with signal.wait_for(r):
// no blocking CUDA call of any kind, no polling, no sleeping.
// TODO(4): no page may move on demand: lane.data should be where each step runs before
// it runs, and the move back to the host is complete before the thread learns that the
// round's GPU work is done. Where the device lacks concurrentManagedAccess, skip the moves, and the
// rounds must still be right. (The shared table is its owner's to advise, in advise_table.)
void run_lane([[maybe_unused]] const Lane& lane, [[maybe_unused]] int rounds, [[maybe_unused]] RoundSignal& signal) {}

}  // namespace ch03
