// Chapter 02 — overlapping transfers and kernels with streams: the API that exercise.cu
// implements (the learner's part, steps 1-4) and what the chapter provides around it.
// main.cu, the tests and the solution all include this file.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <functional>
#include <vector>

namespace ch02 {

// ---- Step 1: streams and pinned buffers ------------------------------------------------
// `count` streams that may run concurrently with each other and never wait for the legacy
// NULL stream; and host memory the copy engines can read and write asynchronously.
std::vector<cudaStream_t> create_streams(int count);
void destroy_streams(std::vector<cudaStream_t>& streams);
int* allocate_host_ints(std::size_t count);
void free_host_ints(int* p);

// ---- Steps 2 and 3: the staged pipeline -------------------------------------------------
// The work: out[i] = in[i] + cycles * add_value, computed by AddKernel (provided: see
// launch_add) on the GPU: copy `in` to the device, run the kernel, copy `out` back.
struct Problem {
  const int* host_in = nullptr;  // n ints
  int* host_out = nullptr;       // n ints
  int* device_in = nullptr;      // n ints
  int* device_out = nullptr;     // n ints
  std::size_t n = 0;
  int cycles = 0;      // arithmetic per element: 0 is a plain copy kernel
  int add_value = 3;
  // Called by run_staged after it has issued chunk c (all three operations), with the
  // chunk's stream. The program uses it to show what breaks concurrency (a cudaFree, a
  // synchronous call) by calling it inside your loop; it does nothing otherwise.
  std::function<void(std::size_t chunk, cudaStream_t stream)> after_chunk;
};

enum class IssueOrder {
  Breadth,  // all copies in, then all kernels, then all copies out
  Depth,    // chunk by chunk: copy in, kernel, copy out, then the next chunk
};

// Split the work into `chunks` pieces (the last may be shorter; n need not divide), and
// give chunk c to streams[c % streams.size()]: its copy in, its kernel, its copy out, all
// asynchronous, issued in `order`. Returns when everything is issued, not when it is done.
void run_staged(const Problem& p, const std::vector<cudaStream_t>& streams, std::size_t chunks,
                IssueOrder order);

// ---- Step 4: the plan that gets closest to the bound ------------------------------------
struct Plan {
  int streams = 1;
  std::size_t chunks = 1;
  IssueOrder order = IssueOrder::Breadth;
};
// Your choice of streams, chunks and order for n ints on a GPU with `copy_engines` copy
// engines. Explain in a comment what you measured.
Plan choose_plan(std::size_t n, int copy_engines);

// ---- Provided by the chapter (streams_support.cu) ----------------------------------------

// AddKernel on [0, count) of in/out, on `stream`, with a grid that fills the GPU.
void launch_add(const int* in, int* out, std::size_t count, int cycles, int add_value,
                cudaStream_t stream);

// The sequential baseline: one copy in of everything, one kernel, one copy out, on `stream`.
void run_sequential(const Problem& p, cudaStream_t stream);

// What out[i] must be (host reference; exact, with 32-bit wrap-around like the GPU).
int expected(int in, int cycles, int add_value);

}  // namespace ch02
