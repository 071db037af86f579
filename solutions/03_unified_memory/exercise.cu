// Chapter 03 — unified memory with streams. The solution of
// chapters/03_unified_memory/exercise.cu.
//
//   ./lab run 03 --solution      run the chapter program with this file
//   ./lab diff 03                your exercise.cu against this one
#include "unified.cuh"

#include "cml/errors.hpp"

namespace ch03 {

// Steps 1 and 3. Step 1's answer was cudaStreamSynchronize(lane.stream): it blocks this
// thread until everything on the stream is done. With the host function enqueued by
// notify_when_done, the thread waits on a condition variable instead; it could do other
// work first, and the wait ends exactly when the stream reached the callback.
void wait_for_gpu([[maybe_unused]] const Lane& lane, RoundSignal& signal, int round) {
  signal.wait_for(round);
}

// Step 2. cudaMemAttachSingle: only kernels on lane.stream use this buffer. Where
// concurrentManagedAccess is 0, the host may then touch it while other streams' kernels
// run; where it is 1 (Pascal and later on Linux) nothing breaks without it, but the driver
// uses it: on an H200, 8 threads' on-demand rounds ran 2x faster attached single than
// global (./lab run 03 -- --mode=streams). The attach takes effect in stream order.
void attach(const Lane& lane) {
  CUDA_CHECK(cudaStreamAttachMemAsync(lane.stream, lane.data, 0, cudaMemAttachSingle));
}

// Step 3. The host function may not call CUDA itself; on_gpu_done only counts the round
// and wakes the waiting thread.
void notify_when_done(const Lane& lane, RoundSignal& signal) {
  CUDA_CHECK(cudaLaunchHostFunc(lane.stream, RoundSignal::on_gpu_done, &signal));
}

// Step 4. The table is read by every kernel and by the host and never written: read-mostly
// lets the driver keep a copy on each side instead of moving it back and forth. (Advice
// on data that is written would be wrong here: a write to a read-mostly page invalidates
// every other copy.) The data moves as a whole, once each way per round, ahead of its use.
void advise(const Lane& lane) {
  cudaMemLocation device{};
  device.type = cudaMemLocationTypeDevice;
  device.id = lane.device;
  CUDA_CHECK(cudaMemAdvise(lane.table, lane.table_n * sizeof(unsigned), cudaMemAdviseSetReadMostly, device));
}

void prefetch_to_gpu(const Lane& lane) {
  cudaMemLocation device{};
  device.type = cudaMemLocationTypeDevice;
  device.id = lane.device;
  CUDA_CHECK(cudaMemPrefetchAsync(lane.data, lane.n * sizeof(unsigned), device, 0, lane.stream));
}

void prefetch_to_cpu(const Lane& lane) {
  cudaMemLocation host{};
  host.type = cudaMemLocationTypeHost;
  CUDA_CHECK(cudaMemPrefetchAsync(lane.data, lane.n * sizeof(unsigned), host, 0, lane.stream));
}

}  // namespace ch03
