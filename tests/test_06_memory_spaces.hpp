// Chapter 06's test helpers (tests/test_06_memory_spaces.cpp includes this, and nothing else
// does): the images, filters and outputs the cases check against the CPU. The cases, their bars
// and each step's code checks are in the .cpp.
#pragma once

#include "harness.hpp"
#include "memory_spaces.cuh"
#include "cuda_fault.hpp"
#include "enqueue_only.hpp"
#include "gpu.hpp"
#include "guarded_input.hpp"
#include "integrity.hpp"
#include "kernel_sass.hpp"
#include "launch_geometry.hpp"
#include "stream_race.hpp"
#include "target_case.hpp"
#include "cml/buffers.hpp"
#include "cml/errors.hpp"
#include "cml/sass.hpp"
#include "cml/stream.hpp"
#include "cml/table.hpp"
#include "cml/timing.hpp"
#include "cml/trace.hpp"
#include "cml/verify.hpp"
#include <algorithm>
#include <array>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <sstream>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

namespace {

constexpr int kPerfRows = 8192, kPerfCols = 8192;
constexpr int kPerfPixels = 1 << 24;
constexpr cml::TimingOptions kPerfTiming{2, 10};

// Where the header promises that a call only enqueues (CML_CHECK_ENQUEUE_ONLY).
constexpr const char* kEnqueuePromise =
    "memory_spaces.cuh: it only enqueues its kernel on `stream`; an empty input enqueues nothing";

std::string shape_text(dim3 grid, dim3 block) {
  return "grid " + std::to_string(grid.x) + " " + std::to_string(grid.y) + " " + std::to_string(grid.z) + ", block " +
         std::to_string(block.x) + " " + std::to_string(block.y) + " " + std::to_string(block.z);
}

// `enqueue` on a stream of its own, watched (the CUPTI trace: call from [mechanism] cases).
cml::test::Enqueued watch(const std::function<void(cudaStream_t)>& enqueue) {
  cml::Stream s;
  return cml::test::watch_enqueue({s.get()}, [&] { enqueue(s); });
}

// The grid and block of the one kernel a watched call enqueued, as "grid x y z, block x y z"
// ("" when it enqueued something else: CML_CHECK_ENQUEUE_ONLY says what).
std::string launch_shape(const cml::trace::Trace& t) {
  if (t.kernels.size() != 1) return "";
  const auto& k = t.kernels.front();
  const auto dim = [](const std::array<std::int32_t, 3>& d) {
    return dim3(static_cast<unsigned>(d[0]), static_cast<unsigned>(d[1]), static_cast<unsigned>(d[2]));
  };
  return shape_text(dim(k.grid), dim(k.block));
}

// A step's speed bar: the step's slow version and this build's kernel on the timed problem
// (set up by the step's subclass), timed interleaved (A B A B ..., medians compared).
class SpeedBar {
 public:
  // [perf]: fails, saying why it matters, when this build's kernel is not `bar` x as fast.
  void check() const {
    const auto st = cml::time_interleaved({slow_, yours_}, s_, kPerfTiming);
    INFO(what_ << ": " << cml::ratio_text(st[0], st[1]) << " x the speed of " << why_ << "; want " << bar_);
    CHECK(st[0].median_ms / st[1].median_ms >= bar_);
  }
  // [.measure]: both sides of the bar, five runs, for the lead: this build's kernel over the
  // slow version (the solution's: the correct side) and the slow version over itself (the
  // starter's mistake: about 1, the noise). A mutant's side: the same case in its build.
  // Each run also times a device-to-device copy of the bytes the kernel reads and writes:
  // both kernels as fractions of it say how the bar would read as a fraction of DRAM's
  // speed, which scales with the GPU where the ratio of the two kernels may not
  // (docs/every-gpu.md).
  void measure() const {
    std::printf("device %s\n", cml::test::device().name.c_str());
    for (int run = 0; run < 5; ++run) {
      const auto st = cml::time_interleaved({slow_, yours_, slow_, copy_}, s_, kPerfTiming);
      std::printf(
          "%s run %d: this build's kernel over the slow version %s; the slow version over itself (the "
          "starter's mistake) %s (bar %.2f); of a copy of the same bytes: this build's %s, the slow version %s\n",
          what_.c_str(), run, cml::ratio_text(st[0], st[1]).c_str(), cml::ratio_text(st[0], st[2]).c_str(), bar_,
          cml::ratio_text(st[3], st[1]).c_str(), cml::ratio_text(st[3], st[0]).c_str());
    }
    std::fflush(stdout);
  }

 protected:
  SpeedBar(double bar, std::string what, std::string why) : bar_(bar), what_(std::move(what)), why_(std::move(why)) {}
  const cml::DeviceFacts& device_ = cml::test::device();  // selected before anything is allocated
  cml::Stream s_;
  cml::Work slow_, yours_, copy_;  // copy_: cudaMemcpyAsync of the bytes yours_ reads and writes

 private:
  double bar_;
  std::string what_, why_;
};

constexpr const char* kFaulted = "'s kernel faulted (";

// `launch(in, out, stream)` on `input`, uploaded so that a load past its end faults, and on a
// poisoned output of n floats, in the order of one stream; then `judge` on the n values read
// back ("" when right). "" when right, else what went wrong: a launch error, a kernel that
// did not run, a write past the end, a read past the end (`who` names the threads that must
// not load), work on another stream than the one given (stream_race.hpp), wrong values.
std::string run_on_device(const std::vector<float>& input, std::size_t n, const std::string& function,
                          const std::function<void(const float*, float*, cudaStream_t)>& launch, const std::string& who,
                          const std::function<std::string(const std::vector<float>&)>& judge) {
  cml::Stream s;
  const cml::test::GuardedInput<float> in(input);
  const ch06::Output out(n, s);
  std::string err;
  const auto fault = cml::test::cuda_fault([&] {
    launch(in.data(), out.data(), s);
    err = cml::test::judged_on_stream(function, [&] {
      std::vector<float> got;
      const std::string read = ch06::read_output(out, got, function, s);
      return read.empty() ? judge(got) : read;
    });
  });
  if (fault) return function + kFaulted + *fault + ")" + in.read_past("in", who, *fault);
  return err;
}

// Whether an error is a fault: nothing after it can run in this process (cuda_fault.hpp).
bool faulted(const std::string& err) { return err.find(kFaulted) != std::string::npos; }

// When a kernel did not run: whether the runtime can load it at all (a module that failed to
// load, under a tool or otherwise, shows here), for the message.
std::string loadable(const void* kernel, const std::string& name, const std::string& error) {
  if (error.rfind("the kernel did not run", 0) != 0) return error;
  cudaFuncAttributes a{};
  const cudaError_t e = cudaFuncGetAttributes(&a, kernel);
  return error + "; cudaFuncGetAttributes(" + name + "): " +
         (e == cudaSuccess ? "loads, " + std::to_string(a.numRegs) + " registers, " + std::to_string(a.localSizeBytes) +
                                 " bytes of local memory"
                           : std::string(cudaGetErrorName(e)) + " (" + cudaGetErrorString(e) + ")");
}

// What to add to a mismatch whose value is still the poison.
std::string never_written(float got) {
  return ch06::Output::is_poison(got) ? "; never written: no thread stored that element" : "";
}

}  // namespace
