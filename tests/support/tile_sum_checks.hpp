// What the tests of chapters 07 and 08 both check of a launcher of the tiled sum
// (cml/tile_sum.cuh), whatever the chapter's job type: it only enqueues its one kernel on
// the stream it is given, also for an empty array, launched as job.blocks blocks of
// kThreads threads whatever the tile count, and it refuses stage counts outside
// 1..kMaxStages. `make_job(in, n, partial, blocks, compute, stages)` is the chapter's.
// And what both check of a pipelined kernel's SASS: the tile loop's two block barriers.
// And that a launcher reads nothing past its array: the array ends at an unmapped range
// (cml/end_guard.hpp), so a read past in[n - 1] faults in a plain run. And the array the
// speed bars (and the profile targets) time.
#pragma once

#include "catch.hpp"
#include "cuda_fault.hpp"
#include "enqueue_only.hpp"
#include "gpu.hpp"
#include "launch_geometry.hpp"
#include "speed_bar.hpp"
#include "stream_race.hpp"

#include "cml/buffers.hpp"
#include "cml/end_guard.hpp"
#include "cml/errors.hpp"
#include "cml/guarded.hpp"
#include "cml/sass.hpp"
#include "cml/stream.hpp"
#include "cml/tile_sum.cuh"

#include <cuda_runtime_api.h>

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

namespace cml::test {

template <class JobT, class MakeJob>
void check_sum_enqueues_only(void (*fn)(const JobT&, cudaStream_t), const std::string& name, int stages,
                             MakeJob&& make_job, const std::string& contract) {
  using cml::tile_sum::Word;
  for (const std::size_t n : {std::size_t{5000}, std::size_t{0}}) {
    cml::DeviceBuffer<Word> in(n > 0 ? n : 1), partial(4);
    const JobT job = make_job(in.data(), n, partial.data(), 4, 0, stages);
    CML_CHECK_ENQUEUE_ONLY(
        name + " on n = " + std::to_string(n), [&](cudaStream_t s) { fn(job, s); }, 1,
        contract + ": each function only enqueues its kernel on `stream`, also for n == 0");
  }
}

// "" when `k`, the launch of a job of `blocks` blocks over `pieces` tiles (or boxes: `what`),
// has the grid every tiled sum launches: job.blocks blocks of kThreads threads, 1-D; else
// the mistake, in numbers. The grid is the job's, not the work's: tile t belongs to block
// t % job.blocks, so a block may own many tiles, or none (and writes 0).
inline std::string sum_grid_error(const cml::trace::KernelRecord& k, int blocks, std::size_t pieces,
                                  const std::string& what) {
  using cml::tile_sum::kThreads;
  if (k.grid == std::array<std::int32_t, 3>{blocks, 1, 1} && k.block == std::array<std::int32_t, 3>{kThreads, 1, 1})
    return "";
  std::string why;
  if (k.block != std::array<std::int32_t, 3>{kThreads, 1, 1})
    why = "kThreads threads a block, 1-D: compute_tile and finish_block share a tile's words among exactly 256 threads";
  else if (cml::test::volume(k.grid) < static_cast<std::uint64_t>(blocks))
    why = "too few blocks: partial[b] of a block that is not launched is never written (a block with no " + what +
          " writes 0)";
  else if (cml::test::volume(k.grid) == pieces)
    why = "a block per " + what + " is not the job's grid: " + what +
          " t belongs to block t % job.blocks, and each "
          "block loops over its " +
          what + "s (partial[b] is block b's sum)";
  else
    why = "launch job.blocks blocks, 1-D";
  return "your grid has " + cml::test::geometry_text(k) + " for job.blocks = " + std::to_string(blocks) + " over " +
         std::to_string(pieces) + " " + what + "s; the contract wants job.blocks = " + std::to_string(blocks) +
         " blocks of kThreads = " + std::to_string(kThreads) + " threads: " + why;
}

// The launch of fn on jobs of 3 and of 20 blocks over 8 tiles (fewer blocks than tiles, and
// more): job.blocks blocks of kThreads threads each time. Needs the trace.
template <class JobT, class MakeJob>
void check_sum_grid(void (*fn)(const JobT&, cudaStream_t), const std::string& name, const std::string& kernel,
                    int stages, MakeJob&& make_job, const std::string& contract) {
  using cml::tile_sum::Word;
  const std::size_t n = 7 * cml::tile_sum::kTileWords + 5, tiles = cml::tile_sum::tile_count(n);
  cml::DeviceBuffer<Word> in(n);
  for (const int blocks : {3, 20}) {
    CAPTURE(blocks);
    cml::DeviceBuffer<Word> partial(64);  // room for a wrong grid's partials too
    const JobT job = make_job(in.data(), n, partial.data(), blocks, 0, stages);
    const Launched l = launched_kernel(kernel, [&](cudaStream_t s) { fn(job, s); });
    {
      INFO(name << " with job.blocks = " << blocks << ": " << l.error << " (" << contract << ")");
      REQUIRE(l.error.empty());
    }
    const std::string err = sum_grid_error(l.kernel, blocks, tiles, "tile");
    INFO(name << ": " << err << " (" << contract
              << ": every function launches job.blocks blocks of kThreads "
                 "threads)");
    CHECK(err.empty());
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
  INFO(kernel
       << " has " << bars
       << " block barriers (BAR.SYNC), finish_block's 2 among them; the tile loop needs 2 "
          "more even with 16-byte copies of one's own piece: thread t computes on the piece thread t + 128 copied, so "
          "wait, barrier, compute, barrier ("
       << where << ")");
  CHECK(bars >= 4);
}

// A division or remainder by a value known only at run time (k % stages, 64-bit) compiles to
// a subroutine of dozens of instructions; in the tile loop it runs every tile. The pipelined
// kernels keep their stage in a counter that wraps, and call no subroutine in a loop; one
// called once before the loop (a block's tile count, say) costs little and is allowed.
inline void check_no_runtime_division(const cml::sass::Function& f, const std::string& kernel,
                                      const std::string& where) {
  const std::size_t calls = cml::sass::subroutine_calls_in_loops(f);
  INFO(kernel << " calls a subroutine " << calls << " time(s) inside a loop (e.g. \""
              << cml::sass::example_of(f, cml::sass::kCallInLoop)
              << "\"): a division or remainder by a run-time value (k % stages, say) is such a subroutine, dozens "
                 "of instructions, and in the tile loop it runs every tile — keep the stage in a counter that wraps "
                 "to 0 at the stage count ("
              << where << ")");
  CHECK(calls == 0);
}

// ---- The timed array ----------------------------------------------------------------------

// The array every speed bar of chapters 07 and 08 times: large_array_bytes() of it, a whole
// number of `multiple` words (its words do not matter), with the partials of `per_sm`
// blocks per SM.
struct TimedWords {
  explicit TimedWords(int per_sm, std::size_t multiple = 1)
      : n(large_array_bytes() / sizeof(cml::tile_sum::Word) / multiple * multiple),
        blocks(per_sm * device().sm_count),
        in(n),
        partial(static_cast<std::size_t>(blocks)) {
    CUDA_CHECK(cudaMemset(in.data(), 0x5A, n * sizeof(cml::tile_sum::Word)));
    CUDA_CHECK(cudaDeviceSynchronize());  // lands before a kernel on a non-blocking stream
  }
  std::size_t n;
  int blocks;
  cml::DeviceBuffer<cml::tile_sum::Word> in, partial;
};

// ---- Reads past the end ------------------------------------------------------------------

// n words of word_at(i) in device memory that ends where the mapped memory ends (at most
// 12 bytes later: the array's start is 16-byte aligned, as the contract promises); those
// bytes are 0xA5, not zeros, as chapter 08's inputs are padded. Throws cml::Skip where the
// GPU cannot place an array so (cml/end_guard.hpp).
struct EndGuardedInput {
  explicit EndGuardedInput(std::size_t n) : words(n, 0xA5) {
    const auto host = cml::tile_sum::make_input(n);
    cml::upload(words.data(), host.data(), n);
  }
  cml::EndGuarded<cml::tile_sum::Word> words;
};

// The shapes the guard is tried on: arrays that end inside a tile (a short last tile, one
// word, 3 words past a tile), on a tile with blocks that own none, and empty (then any read
// faults); small enough for the sanitizer setups.
inline const std::vector<cml::tile_sum::Case>& end_guard_cases() {
  using cml::tile_sum::kTileWords;
  static const std::vector<cml::tile_sum::Case> c = {
      {0, 3, "empty"},
      {1, 1, "one word"},
      {1023, 2, "one short tile, n % 4 == 3"},
      {1025, 1, "a tile and a word"},
      {5 * kTileWords + 6, 2, "5 tiles + 6 words on 2 blocks"},
      {7 * kTileWords + 3, 2, "7 tiles + 3 words on 2 blocks"},
      {11 * kTileWords, 16, "11 tiles on 16 blocks (some with none)"},
      {13 * kTileWords + 2, 3, "13 tiles + 2 words on 3 blocks"},
      {(1u << 17) + 1, 37, "2^17 words + 1 on 37 blocks"},
  };
  return c;
}

// `fn` on every end_guard_cases() shape, at stages 1..max_stages, with no compute: it runs
// without a fault and gives the CPU's sums. The first fault fails the case with `name`,
// the shape, the CUDA error and `advice` (what reads past the end, and the step).
template <class JobT, class MakeJob>
void check_reads_stop_at_end(void (*fn)(const JobT&, cudaStream_t), const std::string& name, int max_stages,
                             MakeJob&& make_job, const std::string& advice) {
  using cml::tile_sum::Word;
  for (const auto& k : end_guard_cases())
    for (int stages = 1; stages <= max_stages; ++stages) {
      std::optional<EndGuardedInput> in;
      try {
        in.emplace(k.n);
      } catch (const cml::Skip& e) {
        CML_SKIP(e.what());
      }
      const cml::GuardedBuffer<Word> partial(static_cast<std::size_t>(k.blocks));
      cml::Stream s;
      const auto want = cml::tile_sum::reference_partials(cml::tile_sum::make_input(k.n), k.blocks, 0);
      std::string wrong;
      const auto fault = cuda_fault([&] {
        fn(make_job(in->words.data(), k.n, partial.data(), k.blocks, 0, stages), s);
        wrong = judged_on_stream(name, [&] {
          std::vector<Word> got;
          if (std::string past = partial.read(got, "the grid's partials", s); !past.empty()) return past;
          const auto r = cml::tile_sum::check_partials(got, want, k.n);
          return r.ok ? std::string() : r.describe();
        });
      });
      if (fault)
        FAIL(name << " on " << k.what << ", stages " << stages << ", faulted: " << *fault
                  << ". The array ends where the mapped memory ends, so the kernel read past in[n - 1]: " << advice);
      INFO(name << " on " << k.what << " in an array that ends where the mapped memory ends, stages " << stages << ": "
                << wrong);
      REQUIRE(wrong.empty());
    }
}

}  // namespace cml::test
