// Chapter 02 — overlapping transfers and kernels with streams: the API that exercise.cu
// implements (the learner's part, steps 1-3) and what the chapter provides around it.
// main.cu, the tests and the solution all include this file.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <functional>
#include <vector>

namespace ch02 {

// ---- Step 1: a pipeline that overlaps --------------------------------------------------
// `count` distinct streams that may run concurrently with each other and never wait for the
// legacy NULL stream; destroy_streams destroys every one of them and empties the vector.
// Host memory the copy engines read and write asynchronously (so a copy from it returns
// before it is done); free_host_ints releases it with the call that matches.
std::vector<cudaStream_t> create_streams(int count);
void destroy_streams(std::vector<cudaStream_t>& streams);
int* allocate_host_ints(std::size_t count);
void free_host_ints(int* p);

// ---- Steps 1 and 2: the staged pipeline -------------------------------------------------
// The work: out[i] = in[i] + cycles * add_value, computed by AddKernel (provided: see
// launch_add) on the GPU: copy `in` to the device, run the kernel, copy `out` back.
struct Problem {
  const int* host_in = nullptr;  // n ints
  int* host_out = nullptr;       // n ints
  int* device_in = nullptr;      // n ints
  int* device_out = nullptr;     // n ints
  std::size_t n = 0;
  int cycles = 0;  // arithmetic per element: 0 is a plain copy kernel
  int add_value = 3;
  // Called by run_staged once per chunk, in increasing c, after it has issued chunk c's
  // operations, with the chunk's stream. The program uses it to show what breaks
  // concurrency (a cudaFree, a synchronous call) by calling it inside your loop.
  std::function<void(std::size_t chunk, cudaStream_t stream)> after_chunk;
};

enum class IssueOrder {
  Breadth,  // all copies in, then all kernels, then all copies out
  Depth,    // chunk by chunk: copy in, kernel, copy out, then the next chunk
};

// Split [0, n) into `chunks` consecutive pieces, chunk 0 first (their sizes are yours to
// choose: n need not divide, they need not be equal, some may be empty), and give chunk c
// to streams[c % streams.size()]: its copy in (host_in to device_in), its kernel (reading
// device_in, writing device_out), its copy out (device_out to host_out), issued in
// `order`, chunks in increasing c. Only enqueues: returns when everything is issued, without waiting for the GPU
// (no synchronising call of any kind) and without touching the legacy NULL stream.
void run_staged(const Problem& p, const std::vector<cudaStream_t>& streams, std::size_t chunks, IssueOrder order);

// ---- Step 3: the plan, from what was measured ------------------------------------------
struct Plan {
  int streams = 1;
  std::size_t chunks = 1;
  IssueOrder order = IssueOrder::Breadth;
};
// What the program measured before it asks for a plan (medians, ms): the phases over all n
// ints, and what one chunk costs whatever its size.
struct Measured {
  double h2d_ms = 0;     // copy in alone
  double kernel_ms = 0;  // AddKernel alone, at the run's cycles
  double d2h_ms = 0;     // copy out alone
  double both_ms = 0;    // copy in and copy out at once on two streams (they share the link)
  double chunk_ms = 0;   // one chunk of one int (copy in, AddKernel, copy out), in a pipeline of many:
                         // the calls, launches and copy set-ups that every chunk adds, whatever its size
  int copy_engines = 0;  // asyncEngineCount: 1 cannot copy both ways at once
};
// Your choice of streams, chunks and order for n ints whose phases took `m`: the plan that
// brings the staged time closest to the bound, max(kernel, both) when copies in and out can
// overlap. Checked on several workloads (copy-bound, kernel-bound, small): derive it from
// `m`, not from one workload's best.
Plan choose_plan(std::size_t n, const Measured& m);

// ---- Provided by the chapter (provided.cu) -----------------------------------------------

// AddKernel on [0, count) of in/out, on `stream`, with a grid that fills the GPU.
void launch_add(const int* in, int* out, std::size_t count, int cycles, int add_value, cudaStream_t stream);

// The sequential baseline: one copy in of everything, one kernel, one copy out, on `stream`.
void run_sequential(const Problem& p, cudaStream_t stream);

// What out[i] must be (host reference; exact, with 32-bit wrap-around like the GPU).
int expected(int in, int cycles, int add_value);

}  // namespace ch02
