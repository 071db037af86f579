// Chapter 02 — the machinery behind --breaker: the learner's staged pipeline run with one
// change that may silently serialise it (other streams, pageable host buffers, or a call
// made after each chunk is issued). The breakers themselves, each a row of data, are in
// main.cu's table, where the lesson is. Program only (--breaker): the tests never include it.
#pragma once

#include "harness.hpp"
#include "streams.cuh"

#include "cml/buffers.hpp"
#include "cml/stream.hpp"

#include <memory>
#include <vector>

namespace ch02 {

// What a breaker's after-chunk call may use: a word on the device and one on the host to
// copy or set, and lists for what it allocates, freed by BrokenRun::release outside any
// timed region.
struct BreakerScratch {
  cml::DeviceBuffer<int> word{1};
  int host_word = 0;
  std::vector<void*> device_allocations, host_allocations;
};

// Which streams the broken pipeline is given.
enum class BreakerStreams {
  Yours,     // create_streams's, as in the unbroken run
  Legacy,    // the legacy NULL stream, for every chunk
  Blocking,  // streams created without cudaStreamNonBlocking, which wait for the NULL stream
};

// One way of breaking concurrency: its name (written once, in main.cu's table), what it does
// (for the table), and how it changes the run.
struct Breaker {
  const char* name;
  const char* what;
  void (*after_chunk)(BreakerScratch&, cudaStream_t) = nullptr;  // called by run_staged after each chunk
  BreakerStreams streams = BreakerStreams::Yours;
  bool pageable = false;  // host buffers from new[] instead of the learner's pinned ones
};

// The learner's staged pipeline over `problem` with `breaker` applied.
class BrokenRun {
 public:
  BrokenRun(const Breaker& breaker, const Problem& problem, const Plan& plan);
  ~BrokenRun();
  BrokenRun(const BrokenRun&) = delete;
  BrokenRun& operator=(const BrokenRun&) = delete;

  // The problem as the broken run sees it (host buffers and after_chunk replaced).
  const Problem& problem() const { return problem_; }
  // Issues the staged pipeline once; returns without waiting, like run_staged.
  void run();
  // Waits for the device and frees what the after-chunk calls allocated.
  void release();

 private:
  Plan plan_;
  Problem problem_;
  std::unique_ptr<Streams> learner_;
  std::vector<cml::Stream> blocking_;
  std::vector<cudaStream_t> streams_;
  std::unique_ptr<int[]> pageable_in_, pageable_out_;
  BreakerScratch scratch_;
};

}  // namespace ch02
