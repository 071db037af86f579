// Chapter 02 — overlapping transfers and kernels with streams. The solution of
// chapters/02_streams/exercise.cu.
//
//   ./lab run 02 --solution      run the chapter program with this file
//   ./lab diff 02                your exercise.cu against this one
#include "streams.cuh"

#include "cml/errors.hpp"

#include <algorithm>
#include <vector>

namespace ch02 {

// Step 1: non-blocking streams never wait for the legacy NULL stream (nor it for them),
// so a stray call on the NULL stream elsewhere cannot serialise the pipeline.
std::vector<cudaStream_t> create_streams(int count) {
  std::vector<cudaStream_t> streams(static_cast<std::size_t>(count));
  for (auto& s : streams) CUDA_CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  return streams;
}

void destroy_streams(std::vector<cudaStream_t>& streams) {
  for (cudaStream_t s : streams) CUDA_CHECK(cudaStreamDestroy(s));
  streams.clear();
}

// Pinned memory: the copy engine reads it by DMA while the CPU and SMs do other work.
int* allocate_host_ints(std::size_t count) {
  void* p = nullptr;
  CUDA_CHECK(cudaMallocHost(&p, count * sizeof(int)));
  return static_cast<int*>(p);
}

void free_host_ints(int* p) { CUDA_CHECK(cudaFreeHost(p)); }

namespace {
// The elements [first, first + count) of chunk c.
struct Chunk {
  std::size_t first, count;
};
Chunk chunk_of(std::size_t c, std::size_t n, std::size_t chunks) {
  const std::size_t size = (n + chunks - 1) / chunks;  // the last chunk takes what is left
  const std::size_t first = std::min(n, c * size);
  return {first, std::min(size, n - first)};
}

void copy_in(const Problem& p, Chunk k, cudaStream_t s) {
  if (k.count == 0) return;
  CUDA_CHECK(cudaMemcpyAsync(p.device_in + k.first, p.host_in + k.first, k.count * sizeof(int),
                             cudaMemcpyHostToDevice, s));
}
void compute(const Problem& p, Chunk k, cudaStream_t s) {
  launch_add(p.device_in + k.first, p.device_out + k.first, k.count, p.cycles, p.add_value, s);
}
void copy_out(const Problem& p, Chunk k, cudaStream_t s) {
  if (k.count == 0) return;
  CUDA_CHECK(cudaMemcpyAsync(p.host_out + k.first, p.device_out + k.first, k.count * sizeof(int),
                             cudaMemcpyDeviceToHost, s));
}
}  // namespace

// Steps 2 and 3. Within a stream the three operations of a chunk run in order; across
// streams the copy engines and the SMs take whichever is ready. Breadth-first issue (all
// copies in, all kernels, all copies out) is the CUDA Handbook's order, written for GPUs
// with one hardware queue; it only works with a stream per chunk: with fewer streams,
// stream order makes chunk c's kernel wait for every later copy-in queued before it on
// the same stream. Depth-first has no such trap (see docs/02_streams.md).
void run_staged(const Problem& p, const std::vector<cudaStream_t>& streams, std::size_t chunks,
                IssueOrder order) {
  chunks = std::max<std::size_t>(1, chunks);
  const auto stream_of = [&](std::size_t c) { return streams[c % streams.size()]; };
  const auto done = [&](std::size_t c) {
    if (p.after_chunk) p.after_chunk(c, stream_of(c));
  };
  if (order == IssueOrder::Depth) {
    for (std::size_t c = 0; c < chunks; ++c) {
      const Chunk k = chunk_of(c, p.n, chunks);
      copy_in(p, k, stream_of(c));
      compute(p, k, stream_of(c));
      copy_out(p, k, stream_of(c));
      done(c);
    }
    return;
  }
  for (std::size_t c = 0; c < chunks; ++c) copy_in(p, chunk_of(c, p.n, chunks), stream_of(c));
  for (std::size_t c = 0; c < chunks; ++c) compute(p, chunk_of(c, p.n, chunks), stream_of(c));
  for (std::size_t c = 0; c < chunks; ++c) {
    copy_out(p, chunk_of(c, p.n, chunks), stream_of(c));
    done(c);
  }
}

// Step 4. Measured on an H200 (3 copy engines, PCIe gen 5), 256 MiB each way at the
// balanced point (kernel as long as one copy), ./lab run 02 -- --mode=plan:
//   depth-first, 32 chunks: 2 streams 1.79x, 4 streams 2.40x, 8 streams 2.49x, 32 2.49x;
//   depth-first, 8 streams: 8 chunks 2.24x, 32 chunks 2.49x, 128 chunks 2.38x;
//   breadth-first: 2.49x only with a stream per chunk (32 x 32), 1.92x with 8 x 32.
// Three stages need at least three chunks in flight, so at least three streams (with two,
// chunk c + 2 waits in its stream for chunk c's copy out); more chunks shorten the fill and
// drain (nothing overlaps the first copy in and the last copy out) until each chunk's fixed
// cost (launches, copy set-up) takes over.
Plan choose_plan(std::size_t n, [[maybe_unused]] int copy_engines) {
  // Chunks of at least 1 MiB: below that the per-operation cost dominates.
  const std::size_t chunks = std::clamp<std::size_t>(n * sizeof(int) / (std::size_t{1} << 20), 1, 32);
  return Plan{8, chunks, IssueOrder::Depth};
}

}  // namespace ch02
