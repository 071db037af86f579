// Chapter 09 — a tiled SGEMM: the tests of exercise.cu, step by step. Results against the
// CPU (every element of shapes up to 1409 x 1409 x 133, tolerance from K and FP32 rounding) on
// whole, ragged, non-square, K = 1, K = 0 and one-row/one-column shapes, with the inputs'
// pads poisoned (NaN) and C's pads and the rows after C watched; the contract's promises
// (sgemm.cuh: shapes refused before anything runs, one kernel on the stream given, nothing
// for an empty C); mechanism from the SASS of the learner's kernels (cuobjdump), Nsight
// Compute's counters (coalesced loads, no bank conflicts) and compute-sanitizer racecheck;
// speed as a fraction of cuBLAS SGEMM (FP32, pedantic) timed in the same process.
//
//   ./lab check 09                        against your exercise.cu
//   meson test -C build "ch09 solution"   against the solution

#include "test_09_sgemm.hpp"

CML_INTEGRITY_CASE(09, "09_sgemm")

namespace {
// What each bar assumes of the hardware, and what a smaller GPU changes: docs/every-gpu.md.
// The speed bars, fractions of cuBLAS SGEMM's GFLOP/s on the same problem in the same
// process, each between the slowest correct solution and the fastest mistake its step
// teaches (docs/09_sgemm.md, "Speed bars": both sides, five runs each). Where a mistake runs
// as fast as its solution, a mechanism check catches it and the bar only sits below the step.
// Step 1: above the starter's naive kernel (0.09 on the H200), below the tile (0.33).
constexpr double kTiledOfCublas = 0.17;
// Step 2: above the unpadded transposed tile (0.12 on the H200: a column in one bank), below
// the conflict-free one (0.34).
constexpr double kGramOfCublas = 0.23;
// Step 3: above one result per thread (step 1's tile, 0.32-0.33 on the H100), below plain
// register blocking (8 x 8 micro-tiles on a 16 x 16 layout, 0.67-0.68).
constexpr double kRegistersOfCublas = 0.5;
// Step 4 over the learner's own step 3, where that step 3 loads many shared words per FFMA:
// a warp tile that conflicts gains nothing (1.0), the warp tile 1.12-1.14 on the H100. Where
// step 3 already loads few, the gain is in it, and step 4 must only keep it (kKeepsGain).
constexpr double kWarpTiledOverRegisters = 1.06;
constexpr double kKeepsGain = 0.98;
// Step 4 of cuBLAS: above the plain layout (0.67-0.68 on the H100), below the warp tile
// (0.76-0.77).
constexpr double kWarpTiledOfCublas = 0.72;
// Step 5: below the pipeline (0.81 on the H200); a wait for every group runs as fast and is
// caught by the SASS.
constexpr double kPipelinedOfCublas = 0.7;
// Step 5 over the learner's own step 4: never slower (the pipeline gained 0.78 -> 0.81 of
// cuBLAS on the H200, within a few times the noise: the SASS checks the mechanism).
constexpr double kPipelinedOverWarpTiled = 1.0;
// Step 6: below the slowest correct TMA pipeline measured (0.86 on the H200: 128 x 128 tiles
// in two stages); one stage runs as fast and is caught by the shared-memory check.
constexpr double kTmaOfCublas = 0.8;
// Step 6 over the learner's own step 5 (0.81 -> 0.90 of cuBLAS on the H200). MEASURE.
constexpr double kTmaOverPipelined = 1.04;

}  // namespace

// Not a test: what the ncu and racecheck tests run under their tool. CML_TARGET=<function>
// runs that function once on a kProfileSide square problem (ncu's steady state);
// CML_TARGET=<function>@small on a small ragged one (compute-sanitizer: every edge path, fast)
// whose k of 1000 is 32 k-tiles, eight rounds of step 6's four stages: racecheck does not see
// TMA's writes, and a producer that refills without waiting laps its consumers only after
// several rounds of slowed threads (k of 200 was too few, H200). Then a barrier times out
// (the kernel fails under the tool) or a stage is overwritten while read, so the small run
// also checks C against the CPU.
TEST_CASE("profile target: one learner function once", "[.target]") {
  const auto target = cml::test::target_name();
  if (!target) return;
  const std::string name = target->substr(0, target->find('@'));
  const bool small = name != *target;
  const Variant& v = variant(name.c_str());
  const Shape shape = small ? (v.is_gram() ? ch09::gram_shape(67, 200) : ch09::gemm_shape(67, 71, 1000))
                            : (v.is_gram() ? ch09::gram_shape(kProfileSide, kProfileSide)
                                           : ch09::gemm_shape(kProfileSide, kProfileSide, kProfileSide));
  const ch09::Problem p(shape);
  cml::Stream s;
  if (!small) {
    ch09::run(v, p, s);
    s.synchronize();
    return;
  }
  const auto r = ch09::run_and_compare(
      p, [&](cudaStream_t st) { ch09::run(v, p, st); }, ch09::cpu_reference_full(p), s);
  if (!r.ok) cml::test::target_wrong(v.label() + " on " + ch09::describe(shape) + ": " + r.describe());
}

// The four cases of the contract every learner function keeps (sgemm.cuh): right on every
// checked shape, nothing read past the matrices' ends, bad shapes refused before anything is
// enqueued, one kernel on the given stream. Each step states them with its own literal name
// and tags (./lab check reads the [stepK] tags from this file); `past_end` is the advice when
// a read past the end faults.
#define CH09_CONTRACT_CASES(STEP, TAG, FN, OPERANDS, past_end)                                                \
  TEST_CASE(STEP ": " FN " is right on whole, ragged, non-square, K = 1 and K = 0 shapes",                    \
            "[ch09]" TAG "[correctness]") {                                                                   \
    const Variant& v = variant(FN);                                                                           \
    check_shapes(v, v.is_gram() ? ch09::gram_shapes() : ch09::gemm_shapes());                                 \
  }                                                                                                           \
  TEST_CASE(STEP ": " FN " reads nothing past the last element of " OPERANDS, "[ch09]" TAG "[correctness]") { \
    check_gemm_reads_stop_at_end(variant(FN), past_end);                                                      \
  }                                                                                                           \
  TEST_CASE(STEP ": " FN " refuses mismatched shapes and leading dimensions", "[ch09]" TAG "[correctness]") { \
    check_refuses_bad_shapes(variant(FN));                                                                    \
  }                                                                                                           \
  TEST_CASE(STEP ": " FN " only enqueues one kernel on its stream", "[ch09]" TAG "[mechanism]") {             \
    CML_REQUIRE_TRACING();                                                                                    \
    check_enqueues_only(variant(FN));                                                                         \
  }

// ---- Step 1 ---------------------------------------------------------------------------------

CH09_CONTRACT_CASES("step 1", "[step1]", "sgemm_tiled", "A or B",
                    "a tile element outside the matrix (row >= m, or k and beyond) must be zero, not loaded")

TEST_CASE("step 1: sgemm_tiled_kernel stages both tiles in shared memory behind barriers", "[ch09][step1][mechanism]") {
  cml::test::device();
  CML_KERNEL_SASS(f, "sgemm_tiled_kernel");
  const std::size_t sts = cml::sass::count(*f, "STS"), lds = cml::sass::count(*f, "LDS"),
                    bar = cml::sass::count(*f, "BAR.SYNC");
  INFO("sgemm_tiled_kernel has "
       << sts << " shared stores, " << lds << " shared loads and " << bar
       << " barriers: a "
          "block loads a tile of A and a tile of B into shared memory, waits for the whole block, computes from them, "
          "and waits again before the next tiles overwrite them (step 1; ./lab hint 09)");
  CHECK(sts > 0);
  CHECK(lds > 0);
  CHECK(bar >= 2);
}

TEST_CASE("step 1: sgemm_tiled_kernel's global loads are coalesced (ncu)", "[ch09][step1][mechanism][profile]") {
  cml::test::device();
  const Variant& v = variant("sgemm_tiled");
  std::string why;
  const auto measured = profiled(v, why);
  CML_REQUIRE_NCU(measured, why);
  const auto& k = measured.front();
  const double per_request = cml::test::sectors_per_request(k, metrics()[kGlobalSectors], metrics()[kGlobalRequests]);
  if (per_request < 0)
    FAIL("ncu counted no global load requests in sgemm_tiled_kernel: load the tiles of A and B (step 1)");
  INFO("sgemm_tiled_kernel's global loads touch "
       << per_request
       << " sectors per request; a warp reading 32 "
          "consecutive floats of a row touches 4 (16 for 16-byte loads); 32 means each lane reads another row — load "
          "the tiles along their rows: threadIdx.x along A's k and along B's n (step 1; ./lab hint 09)");
  CHECK(per_request > 0);
  CHECK(per_request <= 16.5);
}

TEST_CASE("step 1: sgemm_tiled_kernel has no shared-memory race (racecheck)", "[ch09][step1][mechanism]") {
  cml::test::device();
  const Variant& v = variant("sgemm_tiled");
  CML_CHECK_SANITIZER("racecheck", std::string(v.name) + "@small",
                      race_found(v,
                                 "a thread reads a tile element another warp writes with no barrier between, or "
                                 "the next tiles overwrite the ones still being read: a barrier after loading and "
                                 "one before the next load"));
}

TEST_CASE("step 1: sgemm_tiled reaches kTiledOfCublas of cuBLAS", "[ch09][step1][perf]") {
  check_speed(variant("sgemm_tiled"), kTiledOfCublas,
              "each element of a tile must be loaded once and used by a whole row or column of threads");
}

// ---- Step 2 ---------------------------------------------------------------------------------

CH09_CONTRACT_CASES("step 2", "[step2]", "gram_tiled", "A",
                    "both tiles come from A: an element of either outside the matrix must be zero, not loaded")

TEST_CASE("step 2: gram_tiled_kernel reads coalesced and its shared loads have no bank conflict (ncu)",
          "[ch09][step2][mechanism][profile]") {
  cml::test::device();
  const Variant& v = variant("gram_tiled");
  std::string why;
  const auto measured = profiled(v, why);
  CML_REQUIRE_NCU(measured, why);
  const auto& k = measured.front();
  const double per_request = cml::test::sectors_per_request(k, metrics()[kGlobalSectors], metrics()[kGlobalRequests]);
  if (per_request < 0)
    FAIL("ncu counted no global load requests in gram_tiled_kernel: load both tiles from A (step 2)");
  INFO("gram_tiled_kernel's global loads touch "
       << per_request
       << " sectors per request: both operands are rows "
          "of A — read both along k, the transposed one too (step 2; ./lab hint 09)");
  CHECK(per_request > 0);
  CHECK(per_request <= 16.5);
  const double conflicts = value(k, kSharedConflicts), loads = value(k, kSharedLoads);
  INFO("gram_tiled_kernel: ncu counts " << conflicts << " bank conflicts in " << loads << " shared loads ("
                                        << value(k, kSharedWavefronts)
                                        << " wavefronts); want none beyond 2 % of the loads: the tile read across "
                                           "its rows puts a column in one bank unless its rows are padded or its "
                                           "columns swizzled (step 2; ./lab hint 09)");
  CHECK(loads > 0);
  CHECK(conflicts <= 0.02 * loads);
}

TEST_CASE("step 2: gram_tiled_kernel has no shared-memory race (racecheck)", "[ch09][step2][mechanism]") {
  cml::test::device();
  const Variant& v = variant("gram_tiled");
  CML_CHECK_SANITIZER("racecheck", std::string(v.name) + "@small",
                      race_found(v, "a barrier after the tiles are written and one before they are overwritten"));
}

TEST_CASE("step 2: gram_tiled reaches kGramOfCublas of cuBLAS", "[ch09][step2][perf]") {
  check_speed(variant("gram_tiled"), kGramOfCublas,
              "a transposed tile with bank conflicts serialises every column read");
}

// ---- Step 3 ---------------------------------------------------------------------------------

CH09_CONTRACT_CASES(
    "step 3", "[step3]", "sgemm_registers", "A or B",
    "a 16-byte piece must be loaded whole only where the row holds all four floats; past the matrix it is zero")

TEST_CASE("step 3: sgemm_registers_kernel loads its fragments 16 bytes at a time and spills nothing (SASS)",
          "[ch09][step3][mechanism]") {
  cml::test::device();
  const Variant& v = variant("sgemm_registers");
  CML_KERNEL_SASS(f, "sgemm_registers_kernel");
  const std::size_t wide = count_16_byte_shared_loads(*f), all = cml::sass::count(*f, "LDS"),
                    ffma = cml::sass::count(*f, "FFMA");
  INFO("sgemm_registers_kernel has "
       << wide << " 16-byte shared loads of its " << all << " and " << ffma
       << " FFMA: a thread's fragments of A and B are rows of 4 consecutive floats in shared memory — keep A's tile "
          "transposed so that a column of A is a row there (step 3; ./lab hint 09)");
  CHECK(wide > 0);
  CHECK(2 * wide >= all);
  INFO(
      "a micro-tile of r x c results does r x c FFMA for every (r + c) / 4 16-byte loads of its fragments: want at "
      "least 4 FFMA per 16-byte load (a 4 x 4 micro-tile does 8, an 8 x 8 one 16) (step 3)");
  CHECK(ffma >= 4 * wide);
  check_no_local_memory(*f, v);
}

TEST_CASE("step 3: sgemm_registers_kernel has no shared-memory race (racecheck)", "[ch09][step3][mechanism]") {
  cml::test::device();
  const Variant& v = variant("sgemm_registers");
  CML_CHECK_SANITIZER("racecheck", std::string(v.name) + "@small",
                      race_found(v,
                                 "a barrier after the tiles are stored and one before the next tiles overwrite "
                                 "them"));
}

TEST_CASE("step 3: sgemm_registers reaches kRegistersOfCublas of cuBLAS", "[ch09][step3][perf]") {
  check_speed(variant("sgemm_registers"), kRegistersOfCublas,
              "one result per thread leaves the kernel bound by shared-memory loads: compute a micro-tile per "
              "thread from fragments held in registers");
}

// Shared-load wavefronts per warp FFMA of `v`'s kernel, from ncu: one value, or none and why
// (for CML_REQUIRE_NCU).
std::vector<double> wavefronts_per_ffma(const Variant& v, std::string& why) {
  const auto measured = profiled(v, why);
  if (measured.empty()) return {};
  const double ffma = value(measured.front(), kThreadFfma) / 32.0;
  if (ffma <= 0) {
    why = std::string(v.kernel) + " ran no FFMA under ncu";
    return {};
  }
  return {value(measured.front(), kSharedWavefronts) / ffma};
}

// At most `bar` shared-load wavefronts per warp FFMA. Measured (H100, 4096^3): step 1's tile
// 0.75, the plain 16 x 16 layout of 8 x 8 micro-tiles 0.31, the warp tile 0.19, as is a 16 x 16
// layout whose two fragments lie 64 apart (docs/09_sgemm.md, steps 3 and 4).
void check_wavefronts_per_ffma(const Variant& v, double bar, const char* advice) {
  cml::test::device();
  std::string why;
  const auto measured = wavefronts_per_ffma(v, why);
  CML_REQUIRE_NCU(measured, why);
  const double per_ffma = measured.front();
  INFO(v.kernel << ": " << per_ffma << " shared-load wavefronts a warp FFMA; want at most " << bar << ": " << advice
                << " (" << step_text(v.step) << "; ./lab hint 09)");
  CHECK(per_ffma <= bar);
}

// Step 3: under step 1's tile (0.75), above the plain layout (0.31).
constexpr double kRegistersWavefrontsPerFfma = 0.5;
// Step 4: under the plain layout (0.31), above the warp tile (0.19).
constexpr double kWarpTiledWavefrontsPerFfma = 0.25;
// Steps 5 and 6: between a stage whose A rows are unpadded and step 4's layout kept in the
// stages (docs/09_sgemm.md, "Speed bars").
constexpr double kStagedWavefrontsPerFfma = 0.22;

TEST_CASE("step 3: sgemm_registers_kernel reuses each shared load across its micro-tile (ncu: wavefronts per FFMA)",
          "[ch09][step3][mechanism][profile]") {
  check_wavefronts_per_ffma(variant("sgemm_registers"), kRegistersWavefrontsPerFfma,
                            "each float a thread loads from shared memory must serve a row or a column of its "
                            "micro-tile");
}

// ---- Step 4 ---------------------------------------------------------------------------------

CH09_CONTRACT_CASES(
    "step 4", "[step4]", "sgemm_warp_tiled", "A or B",
    "a 16-byte piece must be loaded whole only where the row holds all four floats; past the matrix it is zero")

TEST_CASE("step 4: sgemm_warp_tiled_kernel keeps step 3's 16-byte fragment loads and spills nothing (SASS)",
          "[ch09][step4][mechanism]") {
  cml::test::device();
  const Variant& v = variant("sgemm_warp_tiled");
  CML_KERNEL_SASS(f, "sgemm_warp_tiled_kernel");
  const std::size_t wide = count_16_byte_shared_loads(*f), all = cml::sass::count(*f, "LDS");
  INFO("sgemm_warp_tiled_kernel has "
       << wide << " 16-byte shared loads of its " << all
       << ": a thread's fragments of A and B stay rows of 4 consecutive floats in shared memory, as in step 3 — a "
          "warp tile changes which lanes load which fragments, not how wide the loads are (step 4; ./lab hint 09)");
  CHECK(wide > 0);
  CHECK(2 * wide >= all);
  check_no_local_memory(*f, v);
}

TEST_CASE("step 4: sgemm_warp_tiled_kernel's warps load few shared words per FFMA (ncu: wavefronts per FFMA)",
          "[ch09][step4][mechanism][profile]") {
  check_wavefronts_per_ffma(variant("sgemm_warp_tiled"), kWarpTiledWavefrontsPerFfma,
                            "a warp whose lanes span a long row of C loads many distinct words of B at each k; place "
                            "the 32 lanes over a compact piece of C, so that lanes share fragments, and keep the "
                            "pieces they do load in distinct bank groups");
}

TEST_CASE("step 4: sgemm_warp_tiled_kernel has no shared-memory race (racecheck)", "[ch09][step4][mechanism]") {
  cml::test::device();
  const Variant& v = variant("sgemm_warp_tiled");
  CML_CHECK_SANITIZER("racecheck", std::string(v.name) + "@small",
                      race_found(v,
                                 "a buffer is refilled while a warp still reads it, or read before every warp "
                                 "has written it"));
}

TEST_CASE("step 4: sgemm_warp_tiled is faster than step 3's sgemm_registers, or as fast where step 3 had its layout",
          "[ch09][step4][perf][profile]") {
  cml::test::device();
  // The gain is the layout's: required over a step 3 whose warps load many shared words per
  // FFMA, within the noise over one that already loads few (docs/09_sgemm.md, step 4).
  std::string why;
  const auto measured = wavefronts_per_ffma(variant("sgemm_registers"), why);
  CML_REQUIRE_NCU(measured, why);
  const double step3 = measured.front();
  INFO("step 3's sgemm_registers_kernel: " << step3 << " shared-load wavefronts a warp FFMA (ncu)");
  if (step3 > kWarpTiledWavefrontsPerFfma)
    check_gain(variant("sgemm_warp_tiled"), variant("sgemm_registers"), kWarpTiledOverRegisters,
               "the warp tile must pay for itself: fewer wavefronts per FFMA than step 3's layout");
  else
    check_gain(variant("sgemm_warp_tiled"), variant("sgemm_registers"), kKeepsGain,
               "your step 3 already loads few shared words per FFMA, so step 4 has its gain to keep, not to add: "
               "the warp tile must not be slower than it");
}

TEST_CASE("step 4: sgemm_warp_tiled reaches kWarpTiledOfCublas of cuBLAS", "[ch09][step4][perf]") {
  check_speed(variant("sgemm_warp_tiled"), kWarpTiledOfCublas,
              "a warp's fragment loads at one k should touch few distinct words: a compact warp tile");
}

// ---- Step 5 ---------------------------------------------------------------------------------

CH09_CONTRACT_CASES("step 5", "[step5]", "sgemm_pipelined", "A or B",
                    "a copy past the matrix must read 0 bytes from an address inside it (cp.async src-size 0, pointed "
                    "at the tile), and no tile beyond the last k-tile may be fetched")

TEST_CASE(
    "step 5: sgemm_pipelined_kernel copies 16 bytes with cp.async, zero-fills the edges and waits by groups (SASS)",
    "[ch09][step5][mechanism]") {
  cml::test::device();
  const Variant& v = variant("sgemm_pipelined");
  CML_KERNEL_SASS(f, "sgemm_pipelined_kernel");
  const std::size_t copies = cml::sass::count(*f, "LDGSTS.E.BYPASS.128"), all = cml::sass::count(*f, "LDGSTS"),
                    zfill = cml::sass::count_containing(*f, ".ZFILL"), ldg = cml::sass::count(*f, "LDG");
  INFO("sgemm_pipelined_kernel has " << copies << " 16-byte cp.async.cg copies (LDGSTS.E.BYPASS.128) of " << all
                                     << " LDGSTS, " << ldg
                                     << " LDG: every tile goes from global to shared memory by cp.async, 16 bytes at a "
                                        "time, bypassing L1 (step 5; ./lab hint 09)");
  CHECK(copies > 0);
  CHECK(copies == all);
  CHECK(ldg == 0);
  INFO("sgemm_pipelined_kernel has "
       << zfill
       << " zero-filling copies (.ZFILL): a piece that sticks out of the "
          "matrix must arrive as zeros by the copy's src-size, not by reading past the end (step 5)");
  CHECK(zfill > 0);
  const std::size_t commit = cml::sass::count(*f, "LDGDEPBAR"), wait = cml::sass::count(*f, "DEPBAR");
  INFO("sgemm_pipelined_kernel has " << commit << " commits (LDGDEPBAR) and " << wait
                                     << " waits (DEPBAR): "
                                        "commit each stage's copies as a group and wait for the oldest only (step 5)");
  CHECK(commit > 0);
  CHECK(wait > 0);
  // A wait that leaves groups pending is DEPBAR.LE SB0, N with N > 0; wait_group 0 is 0x0.
  const std::size_t drains = cml::sass::count_containing(*f, "DEPBAR.LE SB0, 0x0");
  INFO("sgemm_pipelined_kernel's "
       << wait
       << " wait(s) all wait for every group (DEPBAR.LE SB0, 0x0): then no copy is "
          "in flight while a stage is computed — wait for the oldest group only, leaving the newer stages' copies "
          "pending (step 5)");
  CHECK(wait > drains);
  check_no_local_memory(*f, v);
}

// Steps 5 and 6 keep step 4's warp tile (the tile at the profile's 1024^3 is 128 x 128 in
// both): an A stage without its pad (step 5) or an A box without its swizzle (step 6) puts a
// warp's 8 rows in one bank group, and only the speed bars stood in front of that.
TEST_CASE("step 5: sgemm_pipelined_kernel's warps load few shared words per FFMA (ncu: wavefronts per FFMA)",
          "[ch09][step5][mechanism][profile]") {
  check_wavefronts_per_ffma(variant("sgemm_pipelined"), kStagedWavefrontsPerFfma,
                            "the stages keep step 4's layout: A's rows padded, so that the rows a warp reads at one "
                            "k fall in distinct bank groups");
}

TEST_CASE("step 5: sgemm_pipelined_kernel has no shared-memory race (racecheck)", "[ch09][step5][mechanism]") {
  const Variant& v = variant("sgemm_pipelined");
  CML_CHECK_SANITIZER("racecheck", std::string(v.name) + "@small",
                      race_found(v,
                                 "a thread computes on a stage other threads' copies filled, or a copy refills a "
                                 "stage others still read: wait for the group, then a barrier, before computing; "
                                 "a barrier after computing, before that stage is refilled"));
}

TEST_CASE("step 5: sgemm_pipelined reaches kPipelinedOfCublas of cuBLAS", "[ch09][step5][perf]") {
  check_speed(variant("sgemm_pipelined"), kPipelinedOfCublas,
              "waiting for every group before computing leaves no copy in flight during the math: keep the next "
              "stages' copies in flight and wait for the oldest only");
}

TEST_CASE("step 5: sgemm_pipelined is no slower than step 4's sgemm_warp_tiled", "[ch09][step5][perf]") {
  check_gain(variant("sgemm_pipelined"), variant("sgemm_warp_tiled"), kPipelinedOverWarpTiled,
             "the copies of the next stages must overlap the arithmetic of this one, not add to it");
}

// ---- Step 6 ---------------------------------------------------------------------------------

CH09_CONTRACT_CASES("step 6", "[step6]", "sgemm_tma", "A or B",
                    "the tensor maps' dimensions are the matrix's rows and columns (not ld, not rounded up to the "
                    "box): the TMA unit zero-fills what lies outside them")

TEST_CASE("step 6: sgemm_tma_kernel's warps load few shared words per FFMA (ncu: wavefronts per FFMA)",
          "[ch09][step6][mechanism][profile]") {
  check_wavefronts_per_ffma(variant("sgemm_tma"), kStagedWavefrontsPerFfma,
                            "the TMA unit writes A's box as the tensor map says: with no swizzle its 128-byte rows "
                            "all start in the same bank group; swizzle the map (128 bytes) and read with the same "
                            "permutation");
}

TEST_CASE("step 6: sgemm_tma_kernel fences its barrier inits for the asynchronous proxy (PTX)",
          "[ch09][step6][mechanism]") {
  cml::test::device();
  CML_KERNEL_PTX(e, "sgemm_tma_kernel");
  INFO(
      "sgemm_tma_kernel: its mbarrier.init is not followed by fence.proxy.async or fence.mbarrier_init — the TMA "
      "copies complete on the full barriers through the asynchronous proxy, which the PTX memory model does not "
      "promise sees the init without a proxy fence (cml::ptx::fence_proxy_async_shared after the inits, before the "
      "__syncthreads) (step 6; ./lab hint 09)");
  CHECK(cml::sass::mbarrier_init_fenced(*e));
}

// One arrival per warp on the empty barriers was step 6's largest gain (docs/09, "Step 6"),
// yet every thread arriving still clears both speed bars (0.90 of cuBLAS on the H200): the
// barrier counts in the PTX say which was written. A count the PTX computes at run time is
// not judged.
TEST_CASE("step 6: sgemm_tma_kernel's barriers expect one arrival per warp, not one per thread (PTX)",
          "[ch09][step6][mechanism]") {
  cml::test::device();
  CML_KERNEL_PTX(e, "sgemm_tma_kernel");
  const unsigned most = largest_mbarrier_count(e->text);
  INFO("sgemm_tma_kernel initialises a barrier for "
       << most << " arrivals a phase: every thread arrives on it. "
       << "Once a warp's lanes have met at __syncwarp, all of them have read the stage, and one lane's arrival "
          "says so: count one arrival per warp (step 6; ./lab hint 09)");
  CHECK(most <= 32);
}

// One lane arriving for its warp is right only once the warp's lanes have met after their
// reads of the stage: lanes are not in lockstep (Volta and later), and without the meeting the
// arrival can free a stage a lane still reads. The results are expected to stay right; the
// PTX shows it.
// With every thread arriving the count case above fails first, and this one is not judged.
TEST_CASE("step 6: sgemm_tma_kernel's lane arrives for its warp only after its warp's lanes met (PTX)",
          "[ch09][step6][mechanism]") {
  cml::test::device();
  CML_KERNEL_PTX(e, "sgemm_tma_kernel");
  if (largest_mbarrier_count(e->text) > 32) return;
  INFO(
      "sgemm_tma_kernel arrives on a barrier after a shared-memory load with no __syncwarp (bar.warp.sync) in "
      "between: one lane's arrival speaks for its warp only after its warp's lanes met, all done reading the stage "
      "(step 6; ./lab hint 09)");
  CHECK(cml::sass::mbarrier_arrivals_after_sync(*e));
}

TEST_CASE("step 6: sgemm_tma_kernel loads its tiles by TMA and waits on mbarriers (SASS)", "[ch09][step6][mechanism]") {
  cml::test::device();
  const Variant& v = variant("sgemm_tma");
  CML_KERNEL_SASS(f, "sgemm_tma_kernel");
  const std::size_t tma = cml::sass::count(*f, "UTMALDG"), syncs = cml::sass::count(*f, "SYNCS"),
                    ldg = cml::sass::count(*f, "LDG"), ldgsts = cml::sass::count(*f, "LDGSTS");
  INFO("sgemm_tma_kernel has " << tma << " TMA loads (UTMALDG), " << syncs << " mbarrier operations (SYNCS), " << ldg
                               << " LDG and " << ldgsts
                               << " LDGSTS: the tiles of A and B come by TMA from your tensor maps, each stage "
                                  "completing on its full barrier (step 6; ./lab hint 09)");
  CHECK(tma > 0);
  CHECK(syncs > 0);
  CHECK(ldg + ldgsts == 0);
  check_no_local_memory(*f, v);
}

// One stage of step 6's pipeline is one box of each tensor map the call encodes (the last
// encoding of each matrix); the kernel's shared memory must hold two of them or more, or
// every tile is awaited before its math with no copy in flight behind it. That mistake runs
// at 0.86 of cuBLAS on the H200, above correct two-stage tiles (docs/09): no speed bar sees it.
TEST_CASE("step 6: sgemm_tma_kernel keeps two stages of boxes or more in shared memory", "[ch09][step6][mechanism]") {
  CML_REQUIRE_TRACING();
  const Variant& v = variant("sgemm_tma");
  const ch09::Problem p(ch09::gemm_shape(512, 512, 512));
  cml::Stream s;
  const auto e = cml::test::watch_enqueue({s.get()}, [&] { ch09::run(v, p, s); });
  CML_REQUIRE_API_OK(e.calls);
  {
    INFO(v.label() << " on " << ch09::describe(p.shape()) << ": " << e.error() << " (" << step_text(v.step) << ")");
    REQUIRE(e.threw.empty());
  }
  if (!e.trace.ok) FAIL("the CUPTI trace failed, so the kernel's shared memory cannot be read: " << e.trace.error);
  std::map<const void*, cml::api::Call> boxes;  // the last encoding of each matrix
  for (const auto& c : e.calls.named("cuTensorMapEncodeTiled")) boxes[c.ptr] = c;
  {
    INFO(v.label() << " encoded no tensor map during the call: encode A's and B's maps in sgemm_tma, for the matrices "
                      "of that call ("
                   << step_text(v.step) << ")");
    REQUIRE(!boxes.empty());
  }
  std::size_t stage = 0;
  std::string shapes;
  for (const auto& [ptr, c] : boxes) {
    stage += c.bytes;
    shapes += std::string(shapes.empty() ? "" : " and ") +
              (ptr == p.a_view().data   ? "A's "
               : ptr == p.b_view().data ? "B's "
                                        : "") +
              std::to_string(c.box[1]) + " x " + std::to_string(c.box[0]);
  }
  const auto kernels = e.trace.kernels_named(v.kernel);
  REQUIRE(kernels.size() == 1);
  const auto shared = static_cast<std::size_t>(kernels[0].shared_bytes);
  INFO(v.kernel << " has " << shared / 1024.0 << " KiB of shared memory a block and one stage of boxes (" << shapes
                << ") takes " << stage / 1024.0
                << " KiB: room for one stage, so each tile is awaited before its math with no "
                   "copy in flight behind it. Give the pipeline two or more stages ("
                << step_text(v.step) << ")");
  CHECK(shared >= 2 * stage);
}

TEST_CASE("step 6: sgemm_tma_kernel has no shared-memory race (racecheck)", "[ch09][step6][mechanism]") {
  const Variant& v = variant("sgemm_tma");
  CML_CHECK_SANITIZER("racecheck", std::string(v.name) + "@small",
                      race_found(v,
                                 "TMA refilled a stage that threads still read: the producer must wait on the "
                                 "stage's empty barrier, which every consumer arrives on after its last read"));
}

TEST_CASE("step 6: sgemm_tma reaches kTmaOfCublas of cuBLAS", "[ch09][step6][perf]") {
  check_speed(variant("sgemm_tma"), kTmaOfCublas,
              "keep several stages of TMA loads in flight: refill a stage as soon as its empty barrier completes");
}

TEST_CASE("step 6: sgemm_tma is faster than step 5's sgemm_pipelined", "[ch09][step6][perf]") {
  check_gain(variant("sgemm_tma"), variant("sgemm_pipelined"), kTmaOverPipelined,
             "one thread's copies free the others to compute: keep two or more stages in flight and the fragment "
             "loads conflict-free");
}

// ---- What the chapter provides ---------------------------------------------------------------

TEST_CASE("the chapter's sgemm_naive and cuBLAS agree with the CPU", "[ch09][correctness][provided]") {
  check_shapes(variant("sgemm_naive"), ch09::gemm_shapes());
  cml::Stream s;
  ch09::Cublas cublas;
  for (const auto& shape : {ch09::gemm_shape(257, 129, 65, "ragged"), ch09::gram_shape(130, 67, "Gram")}) {
    const ch09::Problem p(shape);
    const auto r = ch09::run_and_compare(
        p, [&](cudaStream_t st) { ch09::run_cublas(cublas, p, st); }, ch09::cpu_reference(p), s);
    INFO("cuBLAS on " << ch09::describe(shape) << ": " << r.describe()
                      << " (provided.cu: the ceiling itself is wrong)");
    CHECK(r.ok);
  }
}

// Both sides of the bars, for the maintainer: five runs of each step against cuBLAS, on this
// build (the solution for the correct sides, a mutant's build for a mistake's).
TEST_CASE("measure both sides of the speed bars", "[ch09][.measure]") {
  const auto& d = cml::test::device();
  const int side = speed_side();
  std::printf("device %s (sm_%d), %d^3, cuBLAS %s\n", d.name.c_str(), d.cc(), side, ch09::Cublas::math_mode());
  ch09::Cublas cublas;
  for (int run = 0; run < 5; ++run)
    for (const auto& v : ch09::variants()) {
      if (!cml::needs::missing_for("09", v.step, d).empty()) continue;
      const Shape shape = v.is_gram() ? ch09::gram_shape(side, side) : ch09::gemm_shape(side, side, side);
      const ch09::Problem p(shape);
      const auto st = cml::test::time_together(
          {[&](cudaStream_t s) { ch09::run_cublas(cublas, p, s); }, [&](cudaStream_t s) { ch09::run(v, p, s); }});
      std::printf("run %d  %-28s %8.1f GFLOP/s  of cuBLAS %.3f\n", run, v.label().c_str(),
                  ch09::gflops(shape, st[1].median_ms), st[0].median_ms / st[1].median_ms);
    }
  std::fflush(stdout);
  SUCCEED();
}
