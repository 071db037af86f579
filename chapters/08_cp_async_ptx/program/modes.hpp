// Chapter 08 — what the program's modes share: the settings from the command line, the
// run, a stream, one checked run of a pipeline, and the modes themselves (modes_copy.cu:
// the tile copy and the experiment; modes_sum.cu: the pipelines, checked and timed;
// modes_tma.cu: the matrices of step 5; modes_hints.cu and modes_entangled.cu: two
// experiments beyond the steps, on kernels of their own, hint_copies.cu and
// entangled_commits.cu). main.cu parses and dispatches.
#pragma once

#include "harness.hpp"

#include "cml/errors.hpp"
#include "cml/needs.hpp"
#include "cml/run.hpp"
#include "cml/stream.hpp"
#include "cml/verify.hpp"

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

namespace ch08 {

struct Settings {
  std::string mode = "all";
  std::string variant = "all";
  std::uint64_t size = 1ull << 30;  // bytes of the array (and of the matrix of --mode=tma)
  int stages = 3;
  int compute = 0;
  int blocks_per_sm = 4;
  std::size_t cols = 8191;  // --mode=tma's matrix: words per row
};

struct Context {
  const Settings& s;
  cml::Run run;
  cml::Stream stream{cudaStreamNonBlocking};

  // Why an sm_90 part (steps 4 and 5's copies, needs.txt) cannot run here ("" when it can).
  std::string sm90_missing(const std::string& what) const {
    const std::string why = cml::needs::missing_for("08", 4, run.facts);
    return why.empty() ? "" : what + ": " + why;
  }
  bool sm90() const { return sm90_missing("").empty(); }
  // Throws cml::Skip (exit 77) with the reason when the GPU lacks sm_90.
  void require_sm90(const std::string& what) const {
    if (!sm90()) throw cml::Skip(sm90_missing(what));
  }
  int blocks(int per_sm) const { return per_sm * run.facts.sm_count; }
};

// What one run of a pipeline gave: its partial sums, and why a wait gave up ("" if none).
struct Outcome {
  std::vector<Word> partials;
  std::string stalled;
};

// Runs `launch` once on scrubbed shared memory with a fresh report: its partials and why a
// wait gave up.
template <class Launch>
Outcome run_once(Launch&& launch, Word* partial, int blocks, DeviceReport& report, cudaStream_t stream) {
  report.reset();
  CUDA_CHECK(cudaMemsetAsync(partial, 0xFF, static_cast<std::size_t>(blocks) * sizeof(Word), stream));
  scrub_shared_memory(stream);  // a read before the copy landed finds garbage, not the last run's tile
  launch(stream);
  Outcome o{std::vector<Word>(static_cast<std::size_t>(blocks)), ""};
  CUDA_CHECK(
      cudaMemcpyAsync(o.partials.data(), partial, o.partials.size() * sizeof(Word), cudaMemcpyDeviceToHost, stream));
  CUDA_CHECK(cudaStreamSynchronize(stream));
  o.stalled = describe(report.read());
  return o;
}

// Reports a wrong outcome under `what`; true when right.
inline bool judge(const Outcome& o, const cml::VerifyResult& r, const std::string& what) {
  if (!o.stalled.empty()) {
    std::printf("%s: FAILED: %s\n", what.c_str(), o.stalled.c_str());
    return false;
  }
  return r.ok || cml::report(r, what);
}

// sum_tma on every matrix of matrix_cases() at every stage count, against the CPU
// (modes_tma.cu; --mode=check runs it on sm_90).
bool check_tma(Context& c, DeviceReport& report);

bool copy_mode(Context& c);         // every width and cache level of the tile copy, checked and timed
bool reverse_mode(Context& c);      // the source's experiment, and a neighbour's element with and without a barrier
bool check_mode(Context& c);        // every pipeline against the CPU
bool variants_mode(Context& c);     // the pipelines timed beside chapter 07's
bool sweep_mode(Context& c);        // stages x blocks per SM
bool tma_mode(Context& c);          // a pitched matrix through the tensor memory accelerator
bool cache_hints_mode(Context& c);  // cp.async's L2 cache policies, L2 prefetch sizes and ignore-src, timed
bool entangled_mode(Context& c);    // diverged commits and what a later wait_group waits for

}  // namespace ch08
