// Chapter 07's test helpers (tests/test_07_memcpy_async.cpp includes this, and nothing else
// does): the sums' runs, the SASS each step's mechanism is read from, and the sanitizer targets.
// The cases and the speed bars are in the .cpp.
#pragma once

#include "harness.hpp"
#include "memcpy_async.cuh"
#include "enqueue_only.hpp"
#include "gpu.hpp"
#include "integrity.hpp"
#include "kernel_sass.hpp"
#include "sanitizer_target.hpp"
#include "speed_bar.hpp"
#include "stream_race.hpp"
#include "target_case.hpp"
#include "tile_sum_checks.hpp"
#include "cml/buffers.hpp"
#include "cml/errors.hpp"
#include "cml/guarded.hpp"
#include "cml/sass.hpp"
#include "cml/stream.hpp"
#include "cml/timing.hpp"
#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

namespace {

using ch07::Job;
using ch07::SumFn;
using ch07::Word;

// Runs fn once on n words of word_at(i) (allocated exactly: memcheck sees a read past
// in[n - 1]) and compares every block's sum with the CPU's, the partials followed by
// poisoned words nothing may write. "" when right.
std::string sums_error(SumFn fn, const std::string& function, std::size_t n, int blocks, int compute, int stages) {
  const auto host = ch07::make_input(n);
  cml::DeviceBuffer<Word> in(n > 0 ? n : 1);
  if (n > 0) CUDA_CHECK(cudaMemcpy(in.data(), host.data(), n * sizeof(Word), cudaMemcpyHostToDevice));
  const cml::GuardedBuffer<Word> partial(static_cast<std::size_t>(blocks));
  cml::Stream s;
  fn(ch07::make_job(in.data(), n, partial.data(), blocks, compute, stages), s);
  const auto want = ch07::reference_partials(host, blocks, compute);
  return cml::test::judged_on_stream(function, [&] {
    std::vector<Word> got;
    if (std::string past = partial.read(got, "the grid's partials", s); !past.empty()) return past;
    const auto r = ch07::check_partials(got, want, n);
    return r.ok ? std::string() : r.describe();
  });
}

// Every checked case, at compute 0 and 3, at every stage count when `staged`. The advice
// names the usual cause from which cases failed.
void check_sums_on_every_case(SumFn fn, const char* function, bool staged, const char* step) {
  const int max_stages = staged ? ch07::kMaxStages : 1;
  std::vector<bool> stage_failed(static_cast<std::size_t>(max_stages) + 1, false);
  for (const auto& k : ch07::checked_cases())
    for (const int compute : {0, 3})
      for (int stages = 1; stages <= max_stages; ++stages) {
        // The large cases run three times: a read before the copy landed may go unseen once.
        const int reps = k.n > (1u << 20) ? 3 : 1;
        std::string err;
        try {
          for (int r = 0; r < reps && err.empty(); ++r) err = sums_error(fn, function, k.n, k.blocks, compute, stages);
        } catch (const cml::CudaError& e) {
          // A fault ends the process's CUDA context: no later case could run.
          FAIL("n = "
               << k.n << " (" << k.what << "), compute " << compute << ", stages " << stages
               << ": the kernel "
                  "faulted: "
               << e.what()
               << " — a copy read outside the array (past in[n - 1]: a whole tile copied "
                  "for the short last one, a slot past the block's last tile fetched) or wrote outside its shared "
                  "buffer ("
               << step << "; ./lab hint 07)");
        }
        if (!err.empty()) stage_failed[static_cast<std::size_t>(stages)] = true;
        std::string advice;
        if (!err.empty() && staged && stages == 3 && !stage_failed[1] && !stage_failed[2])
          advice =
              ": stages 1 and 2 pass and 3 fails: the stage index wraps wrongly — the k-th tile lives in buffer "
              "k % stages for any stages, not k & (stages - 1), and the same index is used to fill and to read";
        else if (err == cml::test::ran_elsewhere(function))
          advice = "";
        else if (!err.empty() && std::string(err).find("short last tile") != std::string::npos)
          advice =
              ": the short last tile: copy only its count words (tile_span), and every thread still takes part "
              "in every wait and barrier";
        else if (!err.empty())
          advice =
              ": if the sums are wrong only in some runs or only for large arrays, a thread read a tile before "
              "its copy completed: wait for the copy (its group, its barrier, its pipeline stage — committed) "
              "before the barrier that lets other threads read it";
        INFO("n = " << k.n << " (" << k.what << "), compute " << compute << (staged ? ", stages " : "")
                    << (staged ? std::to_string(stages) : std::string()) << ": " << err << advice << " (" << step
                    << "; ./lab hint 07)");
        CHECK(err.empty());
      }
}

// ---- SASS -------------------------------------------------------------------------------

// The tile reaches shared memory by asynchronous copies only, committed and waited for.
// Each check has its own message in its own scope, so a failure never shows an earlier
// check's words.
void check_async_copies(const cml::sass::Function& f, const char* kernel, const char* step, const char* how) {
  const std::size_t ldgsts = cml::sass::count(f, "LDGSTS"), ublkcp = cml::sass::count(f, "UBLKCP");
  {
    INFO(kernel << " has no LDGSTS and no UBLKCP (asynchronous global-to-shared copies): the tile still passes "
                   "through registers, as in sum_through_registers — "
                << how << " (" << step << "; ./lab hint 07)");
    CHECK(ldgsts + ublkcp > 0);
  }
  {
    const std::size_t ldg = cml::sass::count(f, "LDG");  // LDG.*, not LDGSTS or LDGDEPBAR
    INFO(kernel
         << " has " << ldg << " LDG (global loads into registers) beside its " << ldgsts + ublkcp
         << " asynchronous copies: every word of the tile must reach shared memory by the asynchronous copy, none "
            "through a register ("
         << step << "; ./lab hint 07)");
    CHECK(ldg == 0);
  }
  if (ldgsts + ublkcp == 0) return;  // nothing asynchronous: the checks below would only repeat it
  // What completes the copies: cp.async groups (LDGDEPBAR commits, DEPBAR waits), or a
  // barrier in shared memory (ARRIVES.LDGSTSBAR / UBLKCP complete on it; the wait is
  // SYNCS.PHASECHK from sm_90 on, and before it a loop that polls the barrier with NANOSLEEP
  // between reads). Without a commit, a thread-scope pipeline's wait has nothing to wait for
  // and nvcc drops it: the SASS shows what the sums may hide.
  {
    const std::size_t commits = cml::sass::count(f, "LDGDEPBAR") + cml::sass::count(f, "ARRIVES.LDGSTSBAR") + ublkcp;
    INFO(kernel << ": no stage is ever committed (no LDGDEPBAR: cp.async.commit_group) and no copy is attached to a "
                   "barrier (no ARRIVES.LDGSTSBAR): nothing can wait for these copies — commit each stage's copies "
                   "(producer_commit), in every thread ("
                << step << "; ./lab hint 07)");
    CHECK(commits > 0);
  }
  {
    const bool polled = cml::test::device().cc() < 90;  // a barrier's wait before sm_90
    const std::size_t waits = cml::sass::count(f, "DEPBAR") + cml::sass::count(f, "SYNCS.PHASECHK") +
                              (polled ? cml::sass::count(f, "NANOSLEEP") : 0);
    INFO(kernel << " never waits for its copies (no DEPBAR: cp.async.wait_group; no "
                << (polled ? "polling loop with NANOSLEEP" : "SYNCS.PHASECHK")
                << ": a barrier's "
                   "wait): the compute reads a tile before its copy completed — wait for it before the block barrier ("
                << step << "; ./lab hint 07)");
    CHECK(waits > 0);
  }
}

// ---- compute-sanitizer ------------------------------------------------------------------

#define check_no_race(kernel, step, advice)                                                                    \
  do {                                                                                                         \
    CML_CHECK_SANITIZER(                                                                                       \
        "racecheck", std::string("racecheck:") + (kernel),                                                     \
        "hazards in " << (kernel)                                                                              \
                      << " on a small array: a thread read shared memory before "                              \
                         "the copy that writes it completed (or a copy overwrote words still being read) — " \
                         "even where the sums came out right: "                                                \
                      << (advice) << " (" << (step) << "; ./lab hint 07)");                                    \
  } while (0)

}  // namespace
