// Chapter 03 — unified memory with streams. The solution of
// chapters/03_unified_memory/exercise.cu.
//
//   ./lab run 03 --solution      run the chapter program with this file
//   ./lab diff 03                your exercise.cu against this one
#include "unified_memory.cuh"

#include "cml/errors.hpp"

// Marks this translation unit as the solution: the learner's tests fail when it is linked
// into the learner's build (an exercise.cu that includes or copies this file).
extern "C" const int cml_ch03_solution_tu = 1;

namespace ch03 {

namespace {

cudaMemLocation on_device(int device) {
  cudaMemLocation where{};
  where.type = cudaMemLocationTypeDevice;
  where.id = device;
  return where;
}

}  // namespace

// Step 4. The data moves as a whole, once each way per round, ahead of its use: in stream
// order, so the move to the GPU is done before the kernel starts and the move back before
// the host function fires. Only an enqueue: the host goes on at once.
void prefetch_to_gpu(const Lane& lane) {
  CUDA_CHECK(cudaMemPrefetchAsync(lane.data, lane.n * sizeof(unsigned), on_device(lane.device), 0, lane.stream));
}

void prefetch_to_cpu(const Lane& lane) {
  cudaMemLocation host{};
  host.type = cudaMemLocationTypeHost;
  CUDA_CHECK(cudaMemPrefetchAsync(lane.data, lane.n * sizeof(unsigned), host, 0, lane.stream));
}

// Step 4. The table is read by every kernel and by the host and never written: read-mostly
// lets the driver keep a copy on each side instead of moving it back and forth. Advice is a
// property of the memory, so it is set once, by the memory's owner, where the table is
// made: a lane only uses the table, and each lane advising it would repeat the same call
// once per thread for memory it does not own. (Advice on the data, which both sides write,
// would be wrong: a write to a read-mostly page invalidates every other copy.) Advice to a
// device needs concurrentManagedAccess.
void advise_table(const unsigned* table, std::size_t table_n, int device) {
  int concurrent = 0;
  CUDA_CHECK(cudaDeviceGetAttribute(&concurrent, cudaDevAttrConcurrentManagedAccess, device));
  if (concurrent)
    CUDA_CHECK(cudaMemAdvise(table, table_n * sizeof(unsigned), cudaMemAdviseSetReadMostly, on_device(device)));
}

void run_lane(const Lane& lane, int rounds, RoundSignal& signal) {
  // Step 2. cudaMemAttachSingle: only kernels on lane.stream use this buffer. Where
  // concurrentManagedAccess is 0, the host may then touch it while other streams' kernels
  // run; where it is 1 (Pascal and later on Linux) nothing breaks without it, but the driver
  // uses it: on an H200, 8 threads' on-demand rounds ran 2x faster attached single than
  // global (./lab run 03 -- --mode=streams; docs/03_unified_memory.md, "Attaching memory
  // to a stream"). The attach takes effect in stream order, before the first kernel. (A
  // buffer allocated with cudaMemAttachHost starts attached to no stream; this one was
  // allocated global.)
  CUDA_CHECK(cudaStreamAttachMemAsync(lane.stream, lane.data, 0, cudaMemAttachSingle));

  // Step 4. A prefetch to a device needs concurrentManagedAccess. Without it the host may
  // not touch managed memory a running kernel may use; once the host has synchronised,
  // pages come back on demand, as the CPU touches them (CUDA C++ Programming Guide, unified
  // memory on devices without concurrent managed access). The shared table is advised by
  // its owner, before the lanes start (advise_table): not here.
  int concurrent = 0;
  CUDA_CHECK(cudaDeviceGetAttribute(&concurrent, cudaDevAttrConcurrentManagedAccess, lane.device));

  for (int r = 0; r < rounds; ++r) {
    if (concurrent) prefetch_to_gpu(lane);
    launch_gpu_step(lane, r);
    if (concurrent) prefetch_to_cpu(lane);
    // Steps 1 and 3. The host function runs when everything before it on lane.stream is
    // done (kernel and move back included); it only counts the round and wakes this
    // thread, which sleeps on a condition variable meanwhile: no CUDA call blocks, and
    // other lanes' streams go on. (Step 1's first answer, cudaStreamSynchronize(lane.stream),
    // is right too, but it blocks inside CUDA, often spinning a core.) A host function may
    // not call CUDA itself.
    CUDA_CHECK(cudaLaunchHostFunc(lane.stream, RoundSignal::on_gpu_done, &signal));
    signal.wait_for(r);
    host_step(lane, r);
  }
}

}  // namespace ch03
