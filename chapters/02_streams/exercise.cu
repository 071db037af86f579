// Chapter 02 — overlapping transfers and kernels with streams. THE file you edit: four
// steps, TODO(1) to TODO(4). As shipped, everything works, one operation after another:
// the copy engines and the SMs take turns instead of working together.
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

// TODO(1): create `count` streams with cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking)
// and destroy them in destroy_streams. As shipped, every "stream" is the legacy NULL
// stream (0), which waits for all other work on the device and makes all work wait for it.
std::vector<cudaStream_t> create_streams(int count) {
  return std::vector<cudaStream_t>(static_cast<std::size_t>(count), nullptr);
}

void destroy_streams(std::vector<cudaStream_t>& streams) { streams.clear(); }

// TODO(1): the host buffers must be pinned (cudaMallocHost / cudaFreeHost): a copy from
// pageable memory is staged by the CPU and cannot overlap anything.
int* allocate_host_ints(std::size_t count) { return new int[count]; }

void free_host_ints(int* p) { delete[] p; }

// TODO(2): split the work into `chunks` pieces and give chunk c to streams[c % S]: its
// cudaMemcpyAsync in, launch_add, its cudaMemcpyAsync out. Different streams' work may run
// at the same time: one chunk's copy while another chunk's kernel runs.
// TODO(3): n need not be a multiple of `chunks`: the last chunk is shorter (and with more
// chunks than elements, some are empty). Call p.after_chunk(c, stream) (when it is set)
// after issuing chunk c's three operations.
// TODO(4) is in choose_plan below; `order` says in which order to issue the operations.
void run_staged(const Problem& p, const std::vector<cudaStream_t>& streams,
                [[maybe_unused]] std::size_t chunks, [[maybe_unused]] IssueOrder order) {
  cudaStream_t s = streams.front();
  CUDA_CHECK(cudaMemcpyAsync(p.device_in, p.host_in, p.n * sizeof(int), cudaMemcpyHostToDevice, s));
  launch_add(p.device_in, p.device_out, p.n, p.cycles, p.add_value, s);
  CUDA_CHECK(cudaMemcpyAsync(p.host_out, p.device_out, p.n * sizeof(int), cudaMemcpyDeviceToHost, s));
  if (p.after_chunk) p.after_chunk(0, s);
}

// TODO(4): choose the streams, chunk count and issue order that come closest to the bound
// for n ints, and say in a comment what you measured (./lab run 02 -- --mode=plan tries
// many). With one chunk nothing can overlap.
Plan choose_plan([[maybe_unused]] std::size_t n, [[maybe_unused]] int copy_engines) {
  return Plan{1, 1, IssueOrder::Breadth};
}

}  // namespace ch02
