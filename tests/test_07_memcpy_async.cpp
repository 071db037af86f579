// Chapter 07 — asynchronous copies to shared memory: the tests of exercise.cu, step by
// step. Results against the CPU at sizes that are not multiples of 4, of the tile or of
// the stages, every stage count; the header's promises (one kernel on the given stream,
// partials written for every block and nothing past them, stages checked); mechanism from
// the SASS of the learner's own kernels (LDGSTS and no global load into registers; a
// barrier's SYNCS; the 16-byte LDGSTS.E.BYPASS.128 or a bulk UBLKCP on the fast path);
// compute-sanitizer racecheck on a small run of each kernel (a read before the wait can
// give the right sums and still be wrong), memcheck on the fast path's ragged end; speed
// relative to a read-only kernel and to register staging timed in the same process.
//
//   ./lab check 07                        against your exercise.cu
//   meson test -C build "ch07 solution"   against the solution
//   build/tests/test_ch07_solution "[.measure]"   both sides of the speed bars, five runs

#include "test_07_memcpy_async.hpp"

namespace {
// ---- Speed ------------------------------------------------------------------------------

// What each bar assumes of the hardware, and what a smaller GPU changes: docs/every-gpu.md.
// The speed bars, each a ratio to a kernel timed interleaved in the same process, at 2
// blocks per SM and no compute (copy-bound, occupancy limited: where the lesson shows).
// Each sits between the slowest correct figure and the fastest mistake of the H100 and the
// H200, which differ; docs/07_memcpy_async.md, "Speed bars", has both sides of each.
//   The 3-stage pipeline over its own 1-stage form: the overlap itself (no overlap: 1.0).
constexpr double kStagesOverOne = 1.35;
//   The pipeline over register staging: the middle of a whole tile's copies issued by the
//   count-bounded loop and the slowest correct pipeline (40 SMs; docs/07, "Speed bars").
constexpr double kPipelineOverSync = 1.32;
//   The 4-byte pipeline against the plain vectorised read-only kernel: one stage 0.51 on the
//   H100, the faster GPU for it; the solution lowest on 40 of its SMs (CML_SM_LIMIT=40).
constexpr double kPipelineOverReadOnly = 0.55;
//   Step 4: the 16-byte copies over step 3's 4-byte ones (the mistake, 4-byte copies on the
//   fast path: 1.0). The H100's gap is narrow: its slower memory leaves the 4-byte loop time
//   to issue its copies.
constexpr double kFastOverPipeline = 1.06;

// The array every speed bar times (tile_sum_checks.hpp), and its job at `stages`.
struct TimedArray : cml::test::TimedWords {
  using TimedWords::TimedWords;
  Job job(int stages) const { return ch07::make_job(in.data(), n, partial.data(), blocks, 0, stages); }
};

// A speed bar at 2 blocks per SM, no compute: fn at 3 stages reaches at least `bar` of
// base's speed (at base_stages), or the message with both times and what to change.
void check_sum_speed(SumFn fn, const char* name, SumFn base, int base_stages, const char* base_name, double bar,
                     const char* advice) {
  const TimedArray t(2);
  const Job a = t.job(3), b = t.job(base_stages);
  const auto st = cml::test::time_together({[&](cudaStream_t x) { base(b, x); }, [&](cudaStream_t x) { fn(a, x); }});
  cml::test::check_bar(st[0], st[1], bar, std::string(name) + " at 3 stages, 2 blocks per SM, no compute", base_name,
                       std::string(": ") + advice);
}

}  // namespace

// Not a test: what the sanitizer tests run. CML_TARGET=<tool>:<kernel> runs that learner
// kernel once on 3 tiles + 6 words (7 tiles + 3 words for the fast path's ragged end) on
// 2 blocks, 3 stages, in buffers of exactly that size.
TEST_CASE("sanitizer target: one learner kernel on a small ragged array", "[.target]") {
  const auto kernel = cml::test::target_name();
  if (!kernel) return;
  for (const auto& v : ch07::variants()) {
    if (*kernel != v.kernel || (v.fixed_stages == 1)) continue;
    const std::size_t n = v.step == 4 ? 7 * ch07::kTileWords + 3 : 3 * ch07::kTileWords + 6;
    const std::string err = sums_error(v.fn, v.kernel, n, 2, 0, 3);
    if (!err.empty()) std::printf("%s: %s\n", kernel->c_str(), err.c_str());
    return;
  }
}

// Not a test: what ./lab profile 07 runs under ncu (chapters/07_memcpy_async/profile.json).
// CML_TARGET=timed-<variant> (timed-cg, timed-barrier, timed-pipelineN, timed-fast) runs
// that learner kernel once as its speed bar times it: the large array, 2 blocks per SM, no
// compute, 3 stages where the kernel has stages.
TEST_CASE("profile target: one learner kernel as its speed bar runs it", "[.target]") {
  const auto target = cml::test::target_name();
  if (!target) return;
  for (const auto& v : ch07::variants()) {
    if (*target != std::string("timed-") + v.name || v.fixed_stages == 1) continue;
    const TimedArray t(2);
    cml::Stream s;
    v.fn(t.job(v.staged ? 3 : 1), s);
    s.synchronize();
    return;
  }
}

// ---- Step 1 -----------------------------------------------------------------------------

CML_INTEGRITY_CASE(07, "07_memcpy_async")

TEST_CASE("step 1: sum_cg computes every block's sum at sizes that are not multiples of the tile",
          "[ch07][step1][correctness]") {
  check_sums_on_every_case(ch07::sum_cg, "sum_cg", false, "step 1");
}

TEST_CASE("step 1: sum_cg reads nothing past the end of the array, which ends at an unmapped page",
          "[ch07][step1][correctness]") {
  cml::test::check_reads_stop_at_end(
      ch07::sum_cg, "sum_cg", 1, ch07::make_job,
      "the short last tile is s.count words, not kTileWords: copy sizeof(Word) * "
      "s.count bytes (tile_span), whatever compute_tile then reads (step 1; ./lab hint 07)");
}

TEST_CASE("step 1: sum_cg only enqueues one kernel on its stream", "[ch07][step1][mechanism]") {
  cml::test::check_sum_enqueues_only(ch07::sum_cg, "sum_cg", 1, ch07::make_job, "memcpy_async.cuh");
}

TEST_CASE("step 1: sum_cg launches job.blocks blocks of kThreads threads, whatever the tile count",
          "[ch07][step1][mechanism]") {
  CML_REQUIRE_TRACING();
  cml::test::check_sum_grid(ch07::sum_cg, "sum_cg", "sum_cg_kernel", 1, ch07::make_job, "memcpy_async.cuh");
}

TEST_CASE("step 1: sum_cg_kernel copies the tile asynchronously, not through registers (SASS)",
          "[ch07][step1][mechanism]") {
  CML_KERNEL_SASS(f, "sum_cg_kernel");
  check_async_copies(*f, "sum_cg_kernel", "step 1",
                     "one collective copy of the tile by the whole block, then a wait for it");
}

TEST_CASE("step 1: sum_cg_kernel reads no tile before its copy completed (racecheck)", "[ch07][step1][mechanism]") {
  check_no_race("sum_cg_kernel", "step 1",
                "the block waits for the whole tile's copy before any thread computes, and the next copy starts "
                "after every thread is done with the tile");
}

// ---- Step 2 -----------------------------------------------------------------------------

TEST_CASE("step 2: sum_barrier computes every block's sum at sizes that are not multiples of the tile",
          "[ch07][step2][correctness]") {
  check_sums_on_every_case(ch07::sum_barrier, "sum_barrier", false, "step 2");
}

TEST_CASE("step 2: sum_barrier reads nothing past the end of the array, which ends at an unmapped page",
          "[ch07][step2][correctness]") {
  cml::test::check_reads_stop_at_end(ch07::sum_barrier, "sum_barrier", 1, ch07::make_job,
                                     "the short last tile is s.count words, not kTileWords: copy sizeof(Word) * "
                                     "s.count bytes (tile_span) (step 2; ./lab hint 07)");
}

TEST_CASE("step 2: sum_barrier only enqueues one kernel on its stream", "[ch07][step2][mechanism]") {
  cml::test::check_sum_enqueues_only(ch07::sum_barrier, "sum_barrier", 1, ch07::make_job, "memcpy_async.cuh");
}

TEST_CASE("step 2: sum_barrier launches job.blocks blocks of kThreads threads, whatever the tile count",
          "[ch07][step2][mechanism]") {
  CML_REQUIRE_TRACING();
  cml::test::check_sum_grid(ch07::sum_barrier, "sum_barrier", "sum_barrier_kernel", 1, ch07::make_job,
                            "memcpy_async.cuh");
}

TEST_CASE("step 2: sum_barrier_kernel's copies complete on a barrier in shared memory (SASS)",
          "[ch07][step2][mechanism]") {
  CML_KERNEL_SASS(f, "sum_barrier_kernel");
  check_async_copies(*f, "sum_barrier_kernel", "step 2", "cuda::memcpy_async with the barrier as its last argument");
  // The barrier object's instructions: SYNCS from sm_90 on; before it, the copies' arrival
  // on the barrier (ARRIVES.LDGSTSBAR) and the threads' (ATOMS.ARRIVE).
  const bool hopper = cml::test::device().cc() >= 90;
  const char* const ops = hopper ? "SYNCS" : "ARRIVES.LDGSTSBAR or ATOMS.ARRIVE";
  const std::size_t syncs = hopper ? cml::sass::count(*f, "SYNCS")
                                   : cml::sass::count(*f, "ARRIVES.LDGSTSBAR") + cml::sass::count(*f, "ATOMS.ARRIVE");
  INFO("sum_barrier_kernel has "
       << syncs << " " << ops
       << " instructions: no hardware barrier object (mbarrier) is "
          "arrived at or waited on, so the copy does not complete on a cuda::barrier — a __shared__ "
          "cuda::barrier<cuda::thread_scope_block>, init() by one thread, the copy handed to it, arrive_and_wait "
          "(step 2; ./lab hint 07)");
  CHECK(syncs > 0);
}

TEST_CASE("step 2: sum_barrier_kernel reads no tile before its copy completed (racecheck)",
          "[ch07][step2][mechanism]") {
  check_no_race("sum_barrier_kernel", "step 2",
                "every thread arrives and waits on the barrier the copy completes on before it computes");
}

// ---- Step 3 -----------------------------------------------------------------------------

TEST_CASE("step 3: sum_pipeline computes every block's sum at every stage count, tile counts not multiples of it",
          "[ch07][step3][correctness]") {
  check_sums_on_every_case(ch07::sum_pipeline, "sum_pipeline", true, "step 3");
  cml::test::check_stage_range(ch07::sum_pipeline, "sum_pipeline", ch07::make_job, "memcpy_async.cuh");
}

TEST_CASE(
    "step 3: sum_pipeline reads nothing past the end of the array at any stage count, which ends at an unmapped page",
    "[ch07][step3][correctness]") {
  cml::test::check_reads_stop_at_end(ch07::sum_pipeline, "sum_pipeline", ch07::kMaxStages, ch07::make_job,
                                     "a fetch of a slot past the block's last tile copies nothing (t < tiles), and "
                                     "the short last tile copies its count words only — still committing, in every "
                                     "thread (step 3; ./lab hint 07)");
}

TEST_CASE("step 3: sum_pipeline only enqueues one kernel on its stream", "[ch07][step3][mechanism]") {
  cml::test::check_sum_enqueues_only(ch07::sum_pipeline, "sum_pipeline", 3, ch07::make_job, "memcpy_async.cuh");
}

TEST_CASE("step 3: sum_pipeline launches job.blocks blocks of kThreads threads, whatever the tile count",
          "[ch07][step3][mechanism]") {
  CML_REQUIRE_TRACING();
  cml::test::check_sum_grid(ch07::sum_pipeline, "sum_pipeline", "sum_pipeline_kernel", 3, ch07::make_job,
                            "memcpy_async.cuh");
}

TEST_CASE("step 3: sum_pipeline_kernel copies the tiles asynchronously, not through registers (SASS)",
          "[ch07][step3][mechanism]") {
  CML_KERNEL_SASS(f, "sum_pipeline_kernel");
  check_async_copies(*f, "sum_pipeline_kernel", "step 3", "each thread's copies into a stage, committed as one stage");
  cml::test::check_no_runtime_division(*f, "sum_pipeline_kernel", "step 3; ./lab hint 07");
}

TEST_CASE("step 3: sum_pipeline_kernel reads no stage before its copy completed (racecheck)",
          "[ch07][step3][mechanism]") {
  check_no_race("sum_pipeline_kernel", "step 3",
                "commit each stage's copies, wait for the stage (consumer_wait), THEN the block barrier, then "
                "compute; a wait after the barrier covers only this thread's own copies");
}

TEST_CASE("step 3: 3 stages overlap copies with compute: kStagesOverOne of 1 stage", "[ch07][step3][perf]") {
  check_sum_speed(
      ch07::sum_pipeline, "sum_pipeline", ch07::sum_pipeline, 1, "itself at 1 stage", kStagesOverOne,
      "with 3 stages the copies of the next 2 tiles must be in flight while the block computes — fill "
      "stage k + stages - 1 before waiting for stage k, and wait for all but the newest stages - 1 (step 3; "
      "./lab hint 07)");
}

TEST_CASE("step 3: where occupancy is limited the pipeline beats register staging by kPipelineOverSync",
          "[ch07][step3][perf]") {
  check_sum_speed(ch07::sum_pipeline, "sum_pipeline", ch07::sum_sync, 1, "sum_sync (register staging)",
                  kPipelineOverSync,
                  "few blocks per SM hide latency only with more bytes in flight per block, and a loop lean enough to "
                  "issue them (no 64-bit k % stages per tile; a whole tile's copies unrolled) (step 3; ./lab hint 07)");
}

TEST_CASE("step 3: copy-bound, the pipeline reads at kPipelineOverReadOnly of a read-only kernel",
          "[ch07][step3][perf]") {
  check_sum_speed(ch07::sum_pipeline, "sum_pipeline", ch07::sum_read_only, 1, "the read-only kernel",
                  kPipelineOverReadOnly,
                  "copies of the next tiles in flight while the block computes (step 3; ./lab hint 07)");
}

// Not a test: both sides of every speed bar of steps 3 and 4, five runs, in this build (the
// solution's, or a mutant's). Mistake sides: one stage (no overlap) for steps 3's bars, the
// 4-byte copies of step 3 for step 4's.
TEST_CASE("steps 3 and 4: measure both sides of the speed bars", "[ch07][step3][.measure]") {
  const auto& d = cml::test::device();
  std::printf("device %s\n", d.name.c_str());
  for (int run = 0; run < 5; ++run) {
    for (const int per_sm : {2}) {
      const TimedArray t(per_sm);
      const auto with = [&](SumFn fn, int stages) { return [fn, j = t.job(stages)](cudaStream_t x) { fn(j, x); }; };
      const auto st =
          cml::test::time_together({with(ch07::sum_read_only, 1), with(ch07::sum_sync, 1), with(ch07::sum_pipeline, 1),
                                    with(ch07::sum_pipeline, 3), with(ch07::sum_fast, 3)});
      std::printf(
          "run %d, %d blocks per SM: pipeline 3 stages over 1 %s (bar %.2f); over sync %s, 1 stage over "
          "sync %s (bar %.2f); of read-only: pipeline %s, 1 stage %s (bar %.2f), fast %s; fast over pipeline %s (bar "
          "%.2f)\n",
          run, per_sm, cml::ratio_text(st[2], st[3]).c_str(), kStagesOverOne, cml::ratio_text(st[1], st[3]).c_str(),
          cml::ratio_text(st[1], st[2]).c_str(), kPipelineOverSync, cml::ratio_text(st[0], st[3]).c_str(),
          cml::ratio_text(st[0], st[2]).c_str(), kPipelineOverReadOnly, cml::ratio_text(st[0], st[4]).c_str(),
          cml::ratio_text(st[3], st[4]).c_str(), kFastOverPipeline);
    }
  }
  std::fflush(stdout);
  SUCCEED();
}

// ---- Step 4 -----------------------------------------------------------------------------

TEST_CASE("step 4: sum_fast computes every block's sum at every stage count, n not a multiple of 4",
          "[ch07][step4][correctness]") {
  check_sums_on_every_case(ch07::sum_fast, "sum_fast", true, "step 4");
  cml::test::check_stage_range(ch07::sum_fast, "sum_fast", ch07::make_job, "memcpy_async.cuh");
}

TEST_CASE("step 4: sum_fast reads nothing past the end of the array at any stage count, which ends at an unmapped page",
          "[ch07][step4][correctness]") {
  cml::test::check_reads_stop_at_end(ch07::sum_fast, "sum_fast", ch07::kMaxStages, ch07::make_job,
                                     "a thread whose 16-byte piece lies wholly past the tile's count words copies "
                                     "nothing, the piece where the array ends copies its 1-3 words one by one, and "
                                     "a slot past the block's last tile copies nothing (step 4; ./lab hint 07)");
}

TEST_CASE("step 4: sum_fast only enqueues one kernel on its stream", "[ch07][step4][mechanism]") {
  cml::test::check_sum_enqueues_only(ch07::sum_fast, "sum_fast", 3, ch07::make_job, "memcpy_async.cuh");
}

TEST_CASE("step 4: sum_fast launches job.blocks blocks of kThreads threads, whatever the tile count",
          "[ch07][step4][mechanism]") {
  CML_REQUIRE_TRACING();
  cml::test::check_sum_grid(ch07::sum_fast, "sum_fast", "sum_fast_kernel", 3, ch07::make_job, "memcpy_async.cuh");
}

TEST_CASE("step 4: sum_fast_kernel copies 16 bytes per instruction past L1 (SASS)", "[ch07][step4][mechanism]") {
  CML_KERNEL_SASS(f, "sum_fast_kernel");
  check_async_copies(*f, "sum_fast_kernel", "step 4", "step 3's pipeline");
  cml::test::check_no_runtime_division(*f, "sum_fast_kernel", "step 4; ./lab hint 07");
  const std::size_t wide = cml::sass::count(*f, "LDGSTS.E.BYPASS.128"), bulk = cml::sass::count(*f, "UBLKCP"),
                    narrow = cml::sass::count(*f, "LDGSTS") - wide;
  INFO("sum_fast_kernel has "
       << wide << " LDGSTS.E.BYPASS.128, " << bulk << " UBLKCP and " << narrow
       << " narrower "
          "LDGSTS: copies of 4-byte words are 4-byte LDGSTS.E whatever the size; the library emits the 16-byte form "
          "only when the size's type says it is a multiple of 16 and both pointers are 16-byte aligned — "
          "cuda::aligned_size_t<16> (step 4; ./lab hint 07)");
  CHECK(wide + bulk > 0);
}

TEST_CASE("step 4: sum_fast_kernel keeps a block barrier after the wait and one before the refill (SASS)",
          "[ch07][step4][mechanism]") {
  CML_KERNEL_SASS(f, "sum_fast_kernel");
  cml::test::check_tile_loop_barriers(*f, "sum_fast_kernel", "step 4; ./lab hint 07");
}

TEST_CASE("step 4: sum_fast_kernel reads nothing past the end of the array (memcheck)", "[ch07][step4][mechanism]") {
  CML_CHECK_SANITIZER("memcheck", "memcheck:sum_fast_kernel",
                      "bad accesses by sum_fast_kernel on 7 tiles + 3 words: a 16-byte copy of the array's last, "
                      "partial piece reads past the end of the array — copy whole 16-byte pieces with "
                      "aligned_size_t<16>, and the last 1-3 words one by one (step 4; ./lab hint 07)");
}

TEST_CASE("step 4: sum_fast_kernel reads no stage before its copy completed (racecheck)", "[ch07][step4][mechanism]") {
  check_no_race("sum_fast_kernel", "step 4",
                "the same order as step 3: commit, wait, barrier, compute, barrier — thread t copies its own 16 "
                "bytes but computes on the piece thread t + 128 copied");
}

TEST_CASE("step 4: copy-bound, 16-byte copies beat step 3's 4-byte ones by kFastOverPipeline", "[ch07][step4][perf]") {
  check_sum_speed(ch07::sum_fast, "sum_fast", ch07::sum_pipeline, 3, "sum_pipeline's speed", kFastOverPipeline,
                  "one 16-byte copy per thread per tile instead of four 4-byte ones (step 4; ./lab hint 07)");
}
