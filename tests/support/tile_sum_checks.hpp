// What the tests of chapters 07 and 08 both check of a launcher of the tiled sum
// (cml/tile_sum.cuh), whatever the chapter's job type: it only enqueues its one kernel on
// the stream it is given, also for an empty array, and it refuses stage counts outside
// 1..kMaxStages. `make_job(in, n, partial, blocks, compute, stages)` is the chapter's.
// And what both check of a pipelined kernel's SASS: the tile loop's two block barriers.
#pragma once

#include "catch.hpp"
#include "enqueue_only.hpp"

#include "cml/buffers.hpp"
#include "cml/errors.hpp"
#include "cml/sass.hpp"
#include "cml/tile_sum.cuh"

#include <cuda_runtime_api.h>

#include <cstddef>
#include <stdexcept>
#include <string>

namespace cml::test {

template <class JobT, class MakeJob>
void check_sum_enqueues_only(void (*fn)(const JobT&, cudaStream_t), const std::string& name, int stages,
                             MakeJob&& make_job, const std::string& contract) {
  using cml::tile_sum::Word;
  for (const std::size_t n : {std::size_t{5000}, std::size_t{0}}) {
    cml::DeviceBuffer<Word> in(n > 0 ? n : 1), partial(4);
    const JobT job = make_job(in.data(), n, partial.data(), 4, 0, stages);
    CML_CHECK_ENQUEUE_ONLY(name + " on n = " + std::to_string(n), [&](cudaStream_t s) { fn(job, s); }, 1,
                           contract + ": each function only enqueues its kernel on `stream`, also for n == 0");
  }
}

template <class JobT, class MakeJob>
void check_stage_range(void (*fn)(const JobT&, cudaStream_t), const std::string& name, MakeJob&& make_job,
                       const std::string& contract) {
  using cml::tile_sum::Word;
  cml::DeviceBuffer<Word> in(1024), partial(1);
  for (const int bad : {0, cml::tile_sum::kMaxStages + 1}) {
    const JobT job = make_job(in.data(), 1024, partial.data(), 1, 0, bad);
    INFO(name << " with stages = " << bad << " must throw std::invalid_argument (" << contract << ")");
    CHECK_THROWS_AS(fn(job, nullptr), std::invalid_argument);
  }
  CUDA_CHECK(cudaDeviceSynchronize());
}

// compute_tile has thread t compute on the piece thread t + 128 copied, so a pipelined
// kernel's tile loop needs two block barriers: after the wait (the other threads' copies,
// not only one's own) and after the compute (no thread refills a stage another still
// reads). finish_block adds two more: fewer than four BAR.SYNC means the loop lost one.
inline void check_tile_loop_barriers(const cml::sass::Function& f, const std::string& kernel,
                                     const std::string& where) {
  const std::size_t bars = cml::sass::count(f, "BAR.SYNC");
  INFO(kernel << " has " << bars << " block barriers (BAR.SYNC), finish_block's 2 among them; the tile loop needs 2 "
       "more even with 16-byte copies of one's own piece: thread t computes on the piece thread t + 128 copied, so "
       "wait, barrier, compute, barrier (" << where << ")");
  CHECK(bars >= 4);
}

}  // namespace cml::test
