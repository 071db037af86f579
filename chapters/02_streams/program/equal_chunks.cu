// Chapter 02 — see equal_chunks.hpp.
#include "equal_chunks.hpp"

#include "cml/errors.hpp"

#include <cstdio>

namespace ch02 {

const std::vector<LayoutInfo>& layouts() {
  static const std::vector<LayoutInfo> all = {
      {Layout::ChunkStreams, "chunk-streams", "each chunk's copy in, kernel and copy out on its chunk's stream"},
      {Layout::KernelStream, "kernel-stream", "copies on the chunks' streams, every kernel on one stream"},
      {Layout::EngineStreams, "engine-streams", "one stream per engine: copies in, kernels, copies out"},
  };
  return all;
}

EqualChunks::EqualChunks() : chunk_streams_(kChunkStreams) {}

void EqualChunks::reserve_events(std::size_t chunks) {
  // Timing is off: these events only order work, and an event without timing costs less to
  // record and to wait on.
  while (copied_in_.size() < chunks) {
    copied_in_.emplace_back(cudaEventDisableTiming);
    computed_.emplace_back(cudaEventDisableTiming);
  }
}

void EqualChunks::issue(const Problem& p, std::size_t chunks, Layout layout) {
  if (chunks == 0) chunks = 1;
  if (layout != Layout::ChunkStreams) reserve_events(chunks);
  for (std::size_t c = 0; c < chunks; ++c) {
    // Integer arithmetic in 64 bits: n up to 2^40 ints times chunks up to 2^20 fits.
    const std::size_t first = p.n * c / chunks, count = p.n * (c + 1) / chunks - first;
    if (count == 0) continue;
    const cudaStream_t own = chunk_streams_[c % kChunkStreams];
    // Where each operation of the chunk goes.
    cudaStream_t in = own, kernel = own, out = own;
    if (layout == Layout::KernelStream) kernel = kernels_;
    if (layout == Layout::EngineStreams) {
      in = copies_in_;
      kernel = kernels_;
      out = copies_out_;
    }
    CUDA_CHECK(
        cudaMemcpyAsync(p.device_in + first, p.host_in + first, count * sizeof(int), cudaMemcpyHostToDevice, in));
    // Across streams nothing orders the kernel after its copy, nor the copy out after the
    // kernel: stream order does that only within one stream, so an event must, for each chunk.
    if (kernel != in) {
      CUDA_CHECK(cudaEventRecord(copied_in_[c], in));
      CUDA_CHECK(cudaStreamWaitEvent(kernel, copied_in_[c], 0));
    }
    launch_add(p.device_in + first, p.device_out + first, count, p.cycles, p.add_value, kernel);
    if (out != kernel) {
      CUDA_CHECK(cudaEventRecord(computed_[c], kernel));
      CUDA_CHECK(cudaStreamWaitEvent(out, computed_[c], 0));
    }
    CUDA_CHECK(
        cudaMemcpyAsync(p.host_out + first, p.device_out + first, count * sizeof(int), cudaMemcpyDeviceToHost, out));
  }
}

void note_if_pageable(const Problem& p) {
  cudaPointerAttributes a{};
  CUDA_CHECK(cudaPointerGetAttributes(&a, p.host_in));
  if (a.type == cudaMemoryTypeUnregistered)
    std::printf(
        "note: the host buffers are pageable (allocate_host_ints, step 1): every copy below is synchronous,\n"
        "  so nothing overlaps and the measured curve stays flat (--solution runs the reference)\n");
}

}  // namespace ch02
