// Chapter 01 — see reference_copies.hpp.
#include "reference_copies.hpp"

#include "cml/errors.hpp"

#include <algorithm>
#include <cstring>
#include <utility>

namespace ch01 {

CopyGraph::CopyGraph(const PieceBatch& batch, cudaStream_t stream) {
  CUDA_CHECK(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal));
  send_one_by_one(batch, stream, false);
  cudaGraph_t graph = nullptr;
  CUDA_CHECK(cudaStreamEndCapture(stream, &graph));
  const cudaError_t e = cudaGraphInstantiate(&exec_, graph, 0);
  CUDA_CHECK(cudaGraphDestroy(graph));
  CUDA_CHECK(e);
}

CopyGraph::~CopyGraph() { cml::detail::warn_on_error(cudaGraphExecDestroy(exec_), "cudaGraphExecDestroy"); }

void CopyGraph::launch(cudaStream_t stream) const { CUDA_CHECK(cudaGraphLaunch(exec_, stream)); }

SplitCopy::SplitCopy(int ways) {
  for (int i = 0; i < ways; ++i) {
    streams_.emplace_back();
    done_.emplace_back(cudaEventDisableTiming);
  }
}

void SplitCopy::operator()(std::byte* dst, const std::byte* src, std::size_t bytes, cudaMemcpyKind kind,
                           cudaStream_t stream) const {
  start_.record(stream);
  const std::size_t n = streams_.size();
  const std::size_t chunk = (bytes + n - 1) / n;
  for (std::size_t i = 0; i < n; ++i) {
    const std::size_t off = i * chunk;
    if (off >= bytes) break;
    CUDA_CHECK(cudaStreamWaitEvent(streams_[i], start_, 0));
    CUDA_CHECK(cudaMemcpyAsync(dst + off, src + off, std::min(chunk, bytes - off), kind, streams_[i]));
    done_[i].record(streams_[i]);
    CUDA_CHECK(cudaStreamWaitEvent(stream, done_[i], 0));
  }
}

void copy_then_sum(std::uint32_t* device, const std::uint32_t* pinned, std::size_t n, std::size_t stride, int reads,
                   unsigned long long* sum, cudaStream_t stream) {
  CUDA_CHECK(cudaMemsetAsync(sum, 0, sizeof(unsigned long long), stream));
  CUDA_CHECK(cudaMemcpyAsync(device, pinned, n * sizeof(std::uint32_t), cudaMemcpyHostToDevice, stream));
  for (int r = 0; r < reads; ++r) launch_sum(device, n, stride, sum, stream);
}

cml::Table host_access(std::byte* cached, std::byte* write_combined, std::size_t bytes, cudaStream_t stream,
                       cml::TimingOptions timing) {
  std::vector<std::byte> plain(bytes, std::byte{5});
  cml::Table table("write_combined_host",
                   {"memory", "host writes GB/s", "writes noise", "host reads GB/s", "reads noise"});
  for (const auto& [name, pinned] : {std::pair<const char*, std::byte*>{"cudaMallocHost", cached},
                                     std::pair<const char*, std::byte*>{"write-combined", write_combined}}) {
    std::byte* p = pinned;  // a lambda cannot capture a structured binding in C++17
    const auto st = cml::time_interleaved({[&, p](cudaStream_t) { std::memcpy(p, plain.data(), bytes); },
                                           [&, p](cudaStream_t) { std::memcpy(plain.data(), p, bytes); }},
                                          stream, timing, cml::Clock::Host);
    table.row({name, cml::fixed(cml::gbps(bytes, st[0].median_ms), 2), cml::format_noise(st[0]),
               cml::fixed(cml::gbps(bytes, st[1].median_ms), 2), cml::format_noise(st[1])});
  }
  return table;
}

}  // namespace ch01
