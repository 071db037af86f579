// Chapter 01 — copies the program measures the learner's against, beyond the baselines of
// transfers.cuh: the one-by-one copies captured as a CUDA graph (launch cost paid once), one
// copy split over several streams (the "more copy engines" attempt), the copy-then-read that
// zero-copy replaces, and the host's own copies into and out of pinned memory. Program only
// (main.cu's bandwidth, batch and zerocopy modes): the tests never include it.
#pragma once

#include "transfers.cuh"

#include "cml/stream.hpp"
#include "cml/table.hpp"
#include "cml/timing.hpp"

#include <cstdint>
#include <vector>

namespace ch01 {

// A CUDA graph of send_one_by_one's async copies: captured once, launched as one unit.
class CopyGraph {
 public:
  CopyGraph(const PieceBatch& batch, cudaStream_t stream);
  ~CopyGraph();
  CopyGraph(const CopyGraph&) = delete;
  CopyGraph& operator=(const CopyGraph&) = delete;
  void launch(cudaStream_t stream) const;

 private:
  cudaGraphExec_t exec_ = nullptr;
};

// Copies `bytes` in `ways` pieces, each on its own stream, all joined back into the caller's
// stream: copies of one direction share one engine, so this shows that more streams do not
// add bandwidth.
class SplitCopy {
 public:
  explicit SplitCopy(int ways);
  void operator()(std::byte* dst, const std::byte* src, std::size_t bytes, cudaMemcpyKind kind,
                  cudaStream_t stream) const;

 private:
  std::vector<cml::Stream> streams_;
  std::vector<cml::Event> done_;
  cml::Event start_{cudaEventDisableTiming};
};

// Step 3's alternative, enqueued on `stream`: clear *sum, copy n words from `pinned` to
// `device`, then `reads` passes of launch_sum over every `stride`-th word of the copy.
void copy_then_sum(std::uint32_t* device, const std::uint32_t* pinned, std::size_t n, std::size_t stride, int reads,
                   unsigned long long* sum, cudaStream_t stream);

// The host's memcpy into and out of `bytes` of `cached` (cudaMallocHost) and of
// `write_combined` (cudaHostAllocWriteCombined) memory, as GB/s with their noise.
cml::Table host_access(std::byte* cached, std::byte* write_combined, std::size_t bytes, cudaStream_t stream,
                       cml::TimingOptions timing);

}  // namespace ch01
