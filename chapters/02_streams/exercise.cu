// Chapter 02 — overlapping transfers and kernels with streams. THE file you edit: three
// steps, TODO(1) to TODO(3). As shipped, everything works, one operation after another: the
// copy engines and the SMs take turns instead of working together.
//
//   ./lab run 02                      measure your pipeline (-- --mode=shmoo for all cycles)
//   ./lab check 02                    the chapter's tests: which steps pass, and why not
//   ./lab hint 02                     one more hint (chapters/02_streams/hints.md)
//
// Every function is declared, with what it must do, in streams.cuh.
#include "streams.cuh"

#include "cml/errors.hpp"

#include <vector>

namespace ch02 {

// TODO(1): streams that can run at the same time as each other and as anything else in the
// program: none of them may wait for, or make anything wait for, work someone else put on
// the default stream. Whatever you create here, destroy_streams destroys.
// As shipped, every "stream" is the default stream, so nothing can overlap.
std::vector<cudaStream_t> create_streams(int count) {
  return std::vector<cudaStream_t>(static_cast<std::size_t>(count), nullptr);
}

void destroy_streams(std::vector<cudaStream_t>& streams) { streams.clear(); }

// TODO(1): host buffers a copy engine can read and write while the CPU goes on: a copy
// from or to them must return before it is done, so it can overlap a kernel. Release them
// with the call that matches how you got them.
int* allocate_host_ints(std::size_t count) { return new int[count]; }

void free_host_ints(int* p) { delete[] p; }

// TODO(1): make the three phases overlap. Split the work into `chunks` pieces, and give
// chunk c to streams[c % streams.size()]: a copy engine can then bring in one chunk while
// the SMs compute another and the other engine sends a third back. The host only issues
// work here: nothing in this function may wait for the GPU (the caller synchronises once,
// after it returns).
// TODO(2): any n and any chunk count: n need not divide, more chunks than elements leaves
// some empty; every element copied in and out exactly once; p.after_chunk(c, stream) (when
// set) once per chunk, in order, after chunk c's work is issued; both issue orders (`order`).
void run_staged(const Problem& p, const std::vector<cudaStream_t>& streams, [[maybe_unused]] std::size_t chunks,
                [[maybe_unused]] IssueOrder order) {
  cudaStream_t s = streams.front();
  CUDA_CHECK(cudaMemcpyAsync(p.device_in, p.host_in, p.n * sizeof(int), cudaMemcpyHostToDevice, s));
  launch_add(p.device_in, p.device_out, p.n, p.cycles, p.add_value, s);
  CUDA_CHECK(cudaMemcpyAsync(p.host_out, p.device_out, p.n * sizeof(int), cudaMemcpyDeviceToHost, s));
  if (p.after_chunk) p.after_chunk(0, s);
}

// TODO(3): from what the program measured (`m`: each phase alone, both copies at once, what
// one chunk costs whatever its size, the copy engines), choose the streams, chunk count and
// issue order that bring the staged time closest to the bound. The tests try a copy-bound,
// a kernel-bound and a small workload: a plan that is best for one of them only will fail
// another. Say in a comment what you measured (./lab run 02 -- --mode=plan tries many
// plans; --size and --cycles change the workload).
Plan choose_plan([[maybe_unused]] std::size_t n, [[maybe_unused]] const Measured& m) {
  return Plan{1, 1, IssueOrder::Breadth};
}

}  // namespace ch02
