// Chapter 02 — overlapping transfers and kernels with streams. The solution of
// chapters/02_streams/exercise.cu.
//
//   ./lab run 02 --solution      run the chapter program with this file
//   ./lab diff 02                your exercise.cu against this one
#include "streams.cuh"

#include "cml/errors.hpp"

#include <algorithm>
#include <vector>

// Marks this translation unit as the solution: the learner's tests fail when it is linked
// into the learner's build (an exercise.cu that includes or copies this file).
extern "C" const int cml_ch02_solution_tu = 1;

namespace ch02 {

// Step 1: non-blocking streams never wait for the legacy NULL stream (nor it for them), so
// a stray call on the NULL stream elsewhere (a library that takes no stream, a cudaMemset)
// cannot serialise the pipeline. A blocking stream (cudaStreamCreate) would: the legacy
// stream synchronises with blocking streams only. Compiling with --default-stream
// per-thread gives each host thread its own default stream, which behaves like a blocking
// stream, not like the legacy one.
std::vector<cudaStream_t> create_streams(int count) {
  std::vector<cudaStream_t> streams(static_cast<std::size_t>(count));
  for (auto& s : streams) CUDA_CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  return streams;
}

void destroy_streams(std::vector<cudaStream_t>& streams) {
  for (cudaStream_t s : streams) CUDA_CHECK(cudaStreamDestroy(s));
  streams.clear();
}

// Pinned memory: the copy engine reads it by DMA while the CPU and SMs do other work. A
// cudaMemcpyAsync from pageable memory is staged by the CPU and returns only when the
// source is consumed: it neither overlaps nor lets the host run ahead.
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

// Where chunk c starts. With three or more chunks the first and the last are half the size
// of the others: nothing overlaps the first chunk's copy in nor the last one's copy out, so
// small edges shorten the fill and the drain, at no extra chunk. In units of half a chunk,
// chunk c >= 1 starts at 2c - 1 of 2(chunks - 1). Integer arithmetic in 64 bits: n up to
// 2^40 ints times chunks up to 2^20 still fits.
std::size_t start_of(std::size_t c, std::size_t n, std::size_t chunks) {
  if (c == 0) return 0;
  if (c >= chunks) return n;
  if (chunks < 3) return n * c / chunks;
  return n * (2 * c - 1) / (2 * (chunks - 1));
}
Chunk chunk_of(std::size_t c, std::size_t n, std::size_t chunks) {
  const std::size_t first = start_of(c, n, chunks);
  return {first, start_of(c + 1, n, chunks) - first};
}

// An empty chunk issues nothing: a zero-byte copy is legal but costs a call.
void copy_in(const Problem& p, Chunk k, cudaStream_t s) {
  if (k.count == 0) return;
  CUDA_CHECK(
      cudaMemcpyAsync(p.device_in + k.first, p.host_in + k.first, k.count * sizeof(int), cudaMemcpyHostToDevice, s));
}
void compute(const Problem& p, Chunk k, cudaStream_t s) {
  launch_add(p.device_in + k.first, p.device_out + k.first, k.count, p.cycles, p.add_value, s);
}
void copy_out(const Problem& p, Chunk k, cudaStream_t s) {
  if (k.count == 0) return;
  CUDA_CHECK(
      cudaMemcpyAsync(p.host_out + k.first, p.device_out + k.first, k.count * sizeof(int), cudaMemcpyDeviceToHost, s));
}
}  // namespace

// Steps 1 and 2. Within a stream the three operations of a chunk run in order; across
// streams the copy engines and the SMs take whichever is ready. Nothing here waits: the
// caller synchronises once, after everything is issued. Breadth-first issue (all copies
// in, all kernels, all copies out) is the CUDA Handbook's order, written for GPUs with one
// hardware queue; it only works with a stream per chunk: with fewer streams, stream order
// makes chunk c's kernel wait for every later copy in queued before it on the same stream.
// Depth-first has no such trap (see docs/02_streams.md).
void run_staged(const Problem& p, const std::vector<cudaStream_t>& streams, std::size_t chunks, IssueOrder order) {
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

// Step 3. The staged time of C equal chunks fits T(C) = B + (S - B) / C + C * o, with S the
// sequential time, B the bound (the longest of the kernel and both copies at once) and o
// the fixed cost of one chunk: the first chunk's copy in and the last one's copy out overlap
// nothing, and every chunk adds its calls, launch and copy set-ups. S and B come from the
// phases in `m`, o from m.chunk_ms (a chunk of one int, timed in a pipeline of many), so
// the same rule serves a GPU or a problem size it was never tried on. Half-size edge chunks
// (run_staged) halve the first term: T(C) = B + (S - B) / (2 (C - 1)) + C * o.
// The plan takes the C that minimises it, and one chunk when no C beats sequential (a
// small problem: its phases are shorter than the chunks' fixed cost). Three stages need
// three chunks in flight, so at least three streams (with two, chunk c + 2 waits in its
// stream for chunk c's copy out); 8 were as good as 32, and depth-first has no trap
// (docs/02_streams.md, "How many streams, how many chunks, which order").
Plan choose_plan(std::size_t n, const Measured& m) {
  if (m.copy_engines < 1 || n < 2) return Plan{1, 1, IssueOrder::Depth};  // nothing can overlap
  const double sequential = m.h2d_ms + m.kernel_ms + m.d2h_ms;
  // With one copy engine the two directions take turns: they cannot overlap each other.
  const double copies = m.copy_engines >= 2 ? m.both_ms : m.h2d_ms + m.d2h_ms;
  const double bound = std::max(m.kernel_ms, copies);
  std::size_t best_chunks = 1;
  double best = sequential;
  const std::size_t most = std::min<std::size_t>(n, 1024);
  for (std::size_t c = 2; c <= most; ++c) {
    const double fill = c < 3 ? (sequential - bound) / 2 : (sequential - bound) / (2.0 * static_cast<double>(c - 1));
    const double t = bound + fill + static_cast<double>(c) * m.chunk_ms;
    if (t < best) {
      best = t;
      best_chunks = c;
    }
  }
  const int streams = static_cast<int>(std::min<std::size_t>(best_chunks, 8));
  return Plan{streams, best_chunks, IssueOrder::Depth};
}

}  // namespace ch02
