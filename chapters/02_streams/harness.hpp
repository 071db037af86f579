// Chapter 02 — what the program (main.cu) and the tests share: owners of what the learner's
// functions create, released by the learner's own release functions; the workload built over
// them; the check of a pipeline's result; the copy and kernel times that place the balanced
// cycles, and the fixed cost of a chunk; and the CUPTI trace of how much of a pipeline
// overlapped.
#pragma once

#include "streams.cuh"

#include "cml/buffers.hpp"
#include "cml/errors.hpp"
#include "cml/timing.hpp"
#include "cml/trace.hpp"
#include "cml/verify.hpp"

#include <cstddef>
#include <functional>
#include <random>
#include <string>
#include <vector>

namespace ch02 {

// ---- Owners of the learner's allocations ------------------------------------------------

// allocate_host_ints's buffer, freed by free_host_ints.
struct HostInts {
  explicit HostInts(std::size_t n) : p(allocate_host_ints(n)) {}
  ~HostInts() {
    cml::release_noexcept([&] { free_host_ints(p); }, "free_host_ints");
  }
  HostInts(const HostInts&) = delete;
  HostInts& operator=(const HostInts&) = delete;
  int* p;
};

// create_streams's streams, destroyed by destroy_streams.
struct Streams {
  explicit Streams(int count) : s(create_streams(count)) {}
  ~Streams() {
    cml::release_noexcept([&] { destroy_streams(s); }, "destroy_streams");
  }
  Streams(const Streams&) = delete;
  Streams& operator=(const Streams&) = delete;
  std::vector<cudaStream_t> s;
};

// n random ints in the learner's pinned buffers, two device buffers, and the problem over
// them: what the program and the tests run the pipelines on.
struct Workload {
  Workload(std::size_t n, unsigned seed, int cycles) : in(n), out(n), device_in(n), device_out(n) {
    std::minstd_rand rng(seed);
    for (std::size_t i = 0; i < n; ++i) in.p[i] = static_cast<int>(rng());
    problem.host_in = in.p;
    problem.host_out = out.p;
    problem.device_in = device_in.data();
    problem.device_out = device_out.data();
    problem.n = n;
    problem.cycles = cycles;
  }
  HostInts in, out;
  cml::DeviceBuffer<int> device_in, device_out;
  Problem problem;
};

// ---- Is the result right? ---------------------------------------------------------------

// Fills p's output with a pattern no pipeline writes (so a missed element shows), calls
// `issue` (which enqueues a pipeline over p), waits for the device, and checks every output
// element against expected().
cml::VerifyResult verify_pipeline(const Problem& p, const std::function<void()>& issue);
// The same against `want` (expected_output(p)), for a program that checks many runs of one
// problem and computes the reference once.
cml::VerifyResult verify_pipeline(const Problem& p, const std::function<void()>& issue, const std::vector<int>& want);
// What p's output must hold: expected() of every input element.
std::vector<int> expected_output(const Problem& p);

// ---- Where the kernel takes as long as a copy -------------------------------------------

// Medians of copying all of p's ints: each direction alone, and both at once on two streams
// (the directions share the link, so together they take longer than either alone).
struct Phases {
  double h2d = 0, d2h = 0, both = 0;
};
Phases measure_copies(const Problem& p, cml::TimingOptions timing);

// Median of AddKernel over all of p's ints at `cycles`.
double measure_kernel(const Problem& p, int cycles, cml::TimingOptions timing, cudaStream_t stream);

// The cycles value at which the kernel takes as long as the slower copy direction: there the
// three phases are closest to equal, so sequential over the longest phase (the bound on
// staging's speed-up) is largest. The kernel's time is close to linear in cycles, so two
// measurements place it; rounded to a multiple of 64, so repeated runs agree.
int balanced_cycles(const Problem& p, const Phases& copies, cml::TimingOptions timing, cudaStream_t stream);

// What one chunk costs whatever its size: the median time of a pipeline of chunks of one int
// each (copy in, AddKernel at 0 cycles, copy out; depth-first over three streams, so
// consecutive chunks overlap as in a staged run), per chunk. Almost all of it is the calls,
// the launch and each copy's set-up: the fixed cost that more chunks multiply.
double measure_chunk_cost(const Problem& p, cml::TimingOptions timing);

// What choose_plan is given: the copies' phases, the kernel at p.cycles and one chunk's
// fixed cost, with the GPU's copy engines.
Measured measured(const Phases& copies, double kernel_ms, double chunk_ms, int copy_engines);

// ---- What the trace saw -----------------------------------------------------------------

struct Overlap {
  bool ok = false;         // the trace worked and recorded at least one kernel
  std::string error;       // why not, when !ok
  double copy_kernel = 0;  // fraction of the run with a copy and a kernel in flight together
  double in_out = 0;       // fraction with a host-to-device and a device-to-host copy together
  cml::trace::Trace trace;
};

// Runs `issue` twice under the CUPTI trace and keeps the second run's records: CUPTI holds
// back the first kernel while it sets itself up, which would distort the overlap fractions.
// With `host_calls`, the second run's CUDA calls are recorded too, and those that kept the
// host waiting go into the trace's host records (not with a cml::api::Recorder running).
Overlap traced(const std::function<void()>& issue, bool host_calls = false);

}  // namespace ch02
