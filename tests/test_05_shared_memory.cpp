// Chapter 05 — shared memory: the tests of exercise.cu, step by step. Results against the
// CPU on square, non-square and ragged shapes, the input ending at an unmapped page (a read
// past it faults); the contract's promises (shared_memory.cuh:
// only enqueues, on the stream given; nothing for an empty matrix; nothing written outside
// `out`); mechanism from the SASS of the learner's own kernels (cuobjdump), from
// compute-sanitizer racecheck on each kernel, and from Nsight Compute's shared wavefront and
// bank-conflict counters; speed relative to a copy of the same bytes measured in the same
// process. And the bank model (cml/banks.hpp) against ncu on every access-width experiment.
//
//   ./lab check 05                        against your exercise.cu
//   meson test -C build "ch05 solution"   against the solution

#include "test_05_shared_memory.hpp"

CML_INTEGRITY_CASE(05, "05_shared_memory")

namespace {
// ---- Speed ------------------------------------------------------------------------------

// A matrix of 4x the L2 or more (square, 16-aligned), within what is free.
int large_side() {
  const auto& d = cml::test::device();
  std::size_t side = 8192;
  while (side * side * 4 < 4 * d.l2_bytes) side *= 2;
  while (3 * side * side * 4 > d.free_bytes && side > 1024) side /= 2;
  return static_cast<int>(side);
}

// fn's speed bar: at least `bar` of `baseline`'s speed on a large square matrix, timed
// interleaved, or the message with both times and what the learner should change.
void check_transpose_speed(TransposeFn fn, const char* name, TransposeFn baseline, const char* baseline_name,
                           double bar, const char* advice) {
  const int side = large_side();
  const std::size_t n = static_cast<std::size_t>(side) * side;
  cml::DeviceBuffer<float> in(n), out(n);
  CUDA_CHECK(cudaMemset(in.data(), 0, n * 4));
  CUDA_CHECK(cudaDeviceSynchronize());  // lands before a kernel on a non-blocking stream
  const auto st = cml::test::time_together({[&](cudaStream_t x) { baseline(in.data(), out.data(), side, side, x); },
                                            [&](cudaStream_t x) { fn(in.data(), out.data(), side, side, x); }});
  const std::string shape = std::to_string(side) + " x " + std::to_string(side);
  cml::test::check_bar(st[0], st[1], bar, std::string(name) + " on " + shape, baseline_name,
                       std::string(": ") + advice);
}

// What each bar assumes of the hardware, and what a smaller GPU changes: docs/every-gpu.md.
// The speed bars, as ratios to a copy of the same bytes timed interleaved in the same
// process. Each sits between the slowest correct solution and the fastest mistake the step
// teaches, at 8192^2 (the measurements, both GPUs: docs/05_shared_memory.md, "Speed bars:
// the measurements behind them").
// Step 1: above the naive transpose (the mistake, 0.168-0.171 of copy_tiles), below a
// conflicting tile (a correct step 1).
constexpr double kTiledOverCopyTiles = 0.35;
// Steps 2-3: mid-gap between the conflicting tile (the mistake, 0.568-0.576 of copy_tiles
// on the H200) and the slowest correct tile.
constexpr double kPaddedOverCopyTiles = 0.85;
constexpr double kSwizzledOverCopyTiles = 0.85;
// Step 4: a bar for slow kernels only (step 1's 32-way conflicting tile runs at 0.43-0.44 of
// cudaMemcpy on the H200). It cannot separate the layouts the step teaches against: on the
// H200 the float4 tile padded by one float4 (4-way) runs faster than the solution, and the
// unswizzled float4 tile and step 2's scalar tile reach the bar. The ncu test ("no bank
// conflict") catches both float4 layouts, the SASS test (every access 16 bytes) the scalar
// tile (docs/05_shared_memory.md, "Step 4: issue cost against wavefront cost"). The
// solution is lowest on 40 of the H100's SMs (CML_SM_LIMIT=40, docs/every-gpu.md).
constexpr double kWideOverMemcpy = 0.6;

void memcpy_d2d(const float* in, float* out, int rows, int cols, cudaStream_t s) {
  CUDA_CHECK(cudaMemcpyAsync(out, in, static_cast<std::size_t>(rows) * cols * 4, cudaMemcpyDeviceToDevice, s));
}

}  // namespace

// Not a test: what the profile and racecheck tests run under their tool. CML_TARGET=experiments
// launches every access-width experiment once (in harness.hpp's order); CML_TARGET=kernels
// the learner's four transposes once each on the profile shape; CML_TARGET=<kernel name>
// (racecheck) that one transpose once on a small ragged matrix.
TEST_CASE("profile target: the chapter's kernels once each", "[.target]") {
  const auto target = cml::test::target_name();
  if (!target) return;  // a normal run: nothing to launch
  const std::string what = *target;
  cml::Stream s;
  if (what == "experiments") {
    const auto& ex = ch05::experiments();
    cml::DeviceBuffer<unsigned> element(32 * ex.size());
    cml::DeviceBuffer<float> sink(32);
    for (std::size_t i = 0; i < ex.size(); ++i) {
      CUDA_CHECK(cudaMemcpy(element.data() + 32 * i, ex[i].element.data(), 128, cudaMemcpyHostToDevice));
      CUDA_CHECK(cudaDeviceSynchronize());  // lands before a kernel on a non-blocking stream
      ch05::run_experiment(ex[i].store, ex[i].width, element.data() + 32 * i, ex[i].active, sink.data(), s);
    }
    s.synchronize();
    return;
  }
  const auto shape = ch05::kProfileShape;
  const std::size_t n = static_cast<std::size_t>(shape.rows) * shape.cols;
  cml::DeviceBuffer<float> in(n), out(n);
  CUDA_CHECK(cudaMemset(in.data(), 0, n * 4));
  CUDA_CHECK(cudaDeviceSynchronize());                    // lands before a kernel on a non-blocking stream
  const std::string one = what == "kernels" ? "" : what;  // one kernel, for racecheck
  for (const auto& [name, fn] : learner_kernels())
    if (one.empty() || one == name)
      fn(in.data(), out.data(), one.empty() ? shape.rows : 100, one.empty() ? shape.cols : 68, s);
  s.synchronize();
}

// ---- Step 1 -----------------------------------------------------------------------------

TEST_CASE("step 1: transpose_tiled transposes square, non-square and ragged matrices", "[ch05][step1][correctness]") {
  cml::test::device();
  check_shapes(ch05::transpose_tiled, "transpose_tiled", ch05::checked_shapes(), "step 1");
}

// Rows times columns past 2^31 (46349 x 46343, both ragged): an offset computed in int wraps.
TEST_CASE("step 1: transpose_tiled transposes a matrix of more than 2^31 elements, where the GPU has room for it",
          "[ch05][step1][correctness]") {
  check_transpose_past_int_range(ch05::transpose_tiled, "transpose_tiled", 46349, 46343, "step 1");
}

TEST_CASE("step 1: transpose_tiled only enqueues one kernel on its stream", "[ch05][step1][mechanism]") {
  CML_REQUIRE_TRACING();
  check_enqueues_only(ch05::transpose_tiled, "transpose_tiled");
}

TEST_CASE("step 1: transpose_tiled launches one block of 32 x 8 threads per tile of the matrix",
          "[ch05][step1][mechanism]") {
  CML_REQUIRE_TRACING();
  check_tile_grid(ch05::transpose_tiled, "transpose_tiled", "transpose_tiled_kernel", "step 1");
}

TEST_CASE("step 1: transpose_tiled_kernel stages the tile in shared memory behind a barrier",
          "[ch05][step1][mechanism]") {
  cml::test::device();
  CML_KERNEL_SASS(f, "transpose_tiled_kernel");
  const std::size_t sts = cml::sass::count(*f, "STS"), lds = cml::sass::count(*f, "LDS"),
                    bar = cml::sass::count(*f, "BAR.SYNC");
  INFO("transpose_tiled_kernel has "
       << sts << " shared stores, " << lds
       << " shared loads: a warp must write "
          "its row of the tile to shared memory and read a column of it back (step 1; ./lab hint 05)");
  CHECK(sts > 0);
  CHECK(lds > 0);
  INFO(
      "transpose_tiled_kernel has no barrier (BAR.SYNC): a warp reads a column of the tile that other warps "
      "wrote, and nothing makes it wait for them: __syncthreads() between the two phases (step 1)");
  CHECK(bar > 0);
}

TEST_CASE("step 1: transpose_tiled_kernel reads and writes global memory along rows (ncu)",
          "[ch05][step1][mechanism][profile]") {
  check_rows_coalesced("transpose_tiled_kernel", "step 1");
}

TEST_CASE("step 1: transpose_tiled_kernel has no shared-memory race (racecheck)", "[ch05][step1][mechanism]") {
  cml::test::device();
  CML_CHECK_SANITIZER("racecheck", "transpose_tiled_kernel", race_found("transpose_tiled_kernel", "step 1"));
}

TEST_CASE("step 1: transpose_tiled reaches kTiledOverCopyTiles of copy_tiles", "[ch05][step1][perf]") {
  check_transpose_speed(
      ch05::transpose_tiled, "transpose_tiled", ch05::copy_tiles, "copy_tiles", kTiledOverCopyTiles,
      "the naive transpose's column writes reach about 0.17 — read AND write along rows, through the tile "
      "(step 1; ./lab hint 05)");
}

// ---- Step 2 -----------------------------------------------------------------------------

TEST_CASE("step 2: transpose_padded transposes square, non-square and ragged matrices", "[ch05][step2][correctness]") {
  cml::test::device();
  check_shapes(ch05::transpose_padded, "transpose_padded", ch05::checked_shapes(), "step 2");
}

TEST_CASE("step 2: transpose_padded transposes a matrix of more than 2^31 elements, where the GPU has room for it",
          "[ch05][step2][correctness]") {
  check_transpose_past_int_range(ch05::transpose_padded, "transpose_padded", 46349, 46343, "step 2");
}

TEST_CASE("step 2: transpose_padded only enqueues one kernel on its stream", "[ch05][step2][mechanism]") {
  CML_REQUIRE_TRACING();
  check_enqueues_only(ch05::transpose_padded, "transpose_padded");
}

TEST_CASE("step 2: transpose_padded launches one block of 32 x 8 threads per tile of the matrix",
          "[ch05][step2][mechanism]") {
  CML_REQUIRE_TRACING();
  check_tile_grid(ch05::transpose_padded, "transpose_padded", "transpose_padded_kernel", "step 2");
}

TEST_CASE(
    "step 2: transpose_padded_kernel reads and writes along rows, and its shared accesses have no bank conflict (ncu)",
    "[ch05][step2][mechanism][profile]") {
  check_rows_coalesced("transpose_padded_kernel", "step 2");
  check_no_conflicts("transpose_padded_kernel", "step 2",
                     "a column of an unpadded 32 x 32 tile lies in one bank; pad each row by one float "
                     "(tile[32][33]) — a pad row (tile[33][32]) changes nothing");
}

TEST_CASE("step 2: transpose_padded reaches kPaddedOverCopyTiles of copy_tiles", "[ch05][step2][perf]") {
  check_transpose_speed(
      ch05::transpose_padded, "transpose_padded", ch05::copy_tiles, "copy_tiles", kPaddedOverCopyTiles,
      "with 32-way conflicts on the column reads a tile transpose stays near 0.57 (step 2; ./lab hint 05)");
}

TEST_CASE("step 2: transpose_padded_kernel has no shared-memory race (racecheck)", "[ch05][step2][mechanism]") {
  cml::test::device();
  CML_CHECK_SANITIZER("racecheck", "transpose_padded_kernel", race_found("transpose_padded_kernel", "step 2"));
}

// ---- Step 3 -----------------------------------------------------------------------------

TEST_CASE("step 3: transpose_swizzled transposes square, non-square and ragged matrices",
          "[ch05][step3][correctness]") {
  cml::test::device();
  check_shapes(ch05::transpose_swizzled, "transpose_swizzled", ch05::checked_shapes(), "step 3");
}

TEST_CASE("step 3: transpose_swizzled transposes a matrix of more than 2^31 elements, where the GPU has room for it",
          "[ch05][step3][correctness]") {
  check_transpose_past_int_range(ch05::transpose_swizzled, "transpose_swizzled", 46349, 46343, "step 3");
}

TEST_CASE("step 3: transpose_swizzled only enqueues one kernel on its stream", "[ch05][step3][mechanism]") {
  CML_REQUIRE_TRACING();
  check_enqueues_only(ch05::transpose_swizzled, "transpose_swizzled");
}

TEST_CASE("step 3: transpose_swizzled launches one block of 32 x 8 threads per tile of the matrix",
          "[ch05][step3][mechanism]") {
  CML_REQUIRE_TRACING();
  check_tile_grid(ch05::transpose_swizzled, "transpose_swizzled", "transpose_swizzled_kernel", "step 3");
}

TEST_CASE("step 3: transpose_swizzled_kernel reads and writes along rows, has no bank conflict and no pad (ncu)",
          "[ch05][step3][mechanism][profile]") {
  check_rows_coalesced("transpose_swizzled_kernel", "step 3");
  check_no_conflicts("transpose_swizzled_kernel", "step 3",
                     "both a row and a column of the tile must cover the 32 banks: keep element (row, col) at "
                     "column col ^ row, on the stores and on the loads alike",
                     ch05::kTile * ch05::kTile * 4.0);
}

TEST_CASE("step 3: transpose_swizzled reaches kSwizzledOverCopyTiles of copy_tiles", "[ch05][step3][perf]") {
  check_transpose_speed(
      ch05::transpose_swizzled, "transpose_swizzled", ch05::copy_tiles, "copy_tiles", kSwizzledOverCopyTiles,
      "with 32-way conflicts on the column reads a tile transpose stays near 0.57 (step 3; ./lab hint 05)");
}

TEST_CASE("step 3: transpose_swizzled_kernel has no shared-memory race (racecheck)", "[ch05][step3][mechanism]") {
  cml::test::device();
  CML_CHECK_SANITIZER("racecheck", "transpose_swizzled_kernel", race_found("transpose_swizzled_kernel", "step 3"));
}

// ---- Step 4 -----------------------------------------------------------------------------

TEST_CASE("step 4: transpose_wide transposes a matrix of more than 2^31 elements, where the GPU has room for it",
          "[ch05][step4][correctness]") {
  // Rows and columns multiples of 4, as the 16-byte kernel needs, not of its 64-wide tile.
  check_transpose_past_int_range(ch05::transpose_wide, "transpose_wide", 46348, 46340, "step 4");
}

TEST_CASE("step 4: transpose_wide transposes every shape of multiples of 4, and refuses others",
          "[ch05][step4][correctness]") {
  cml::test::device();
  check_shapes(ch05::transpose_wide, "transpose_wide", ch05::checked_shapes_wide(), "step 4");
  cml::DeviceBuffer<float> in(64 * 64), out(64 * 64);
  for (const auto& [rows, cols] : {std::pair<int, int>{6, 8}, {8, 6}, {1, 4}}) {
    INFO("transpose_wide(" << rows << ", " << cols << ") must throw std::invalid_argument (shared_memory.cuh)");
    CHECK_THROWS_AS(ch05::transpose_wide(in.data(), out.data(), rows, cols, nullptr), std::invalid_argument);
  }
  CUDA_CHECK(cudaDeviceSynchronize());
}

TEST_CASE("step 4: transpose_wide launches no more than twice the blocks its tiles need", "[ch05][step4][mechanism]") {
  CML_REQUIRE_TRACING();
  check_wide_grid("step 4");
}

TEST_CASE("step 4: transpose_wide only enqueues one kernel on its stream", "[ch05][step4][mechanism]") {
  CML_REQUIRE_TRACING();
  check_enqueues_only(ch05::transpose_wide, "transpose_wide");
}

TEST_CASE("step 4: every access of transpose_wide_kernel moves 16 bytes (SASS)", "[ch05][step4][mechanism]") {
  cml::test::device();
  CML_KERNEL_SASS(f, "transpose_wide_kernel");
  for (const char* op : {"LDG", "STG", "LDS", "STS"}) {
    const std::size_t wide = count_16_bytes(*f, op), all = cml::sass::count(*f, op);
    INFO("transpose_wide_kernel: "
         << wide << " of its " << all << " " << op
         << " instructions move 16 bytes; "
            "want all, and at least one: float4 through the whole kernel — a float4 tile (16-byte aligned, so no "
            "one-float pad: swizzle float4 columns), and every component of each float4 used (step 4; ./lab hint 05)");
    CHECK(wide > 0);
    CHECK(wide == all);
  }
}

TEST_CASE("step 4: transpose_wide_kernel's 16-byte shared accesses have no bank conflict (ncu)",
          "[ch05][step4][mechanism][profile]") {
  check_no_conflicts("transpose_wide_kernel", "step 4",
                     "a 16-byte access is served per quarter-warp: the 8 lanes of each quarter must cover the 32 "
                     "banks once — lanes reading rows 4 apart of a 256-byte-pitch tile share 4 banks (8-way), and a "
                     "pad of one float4 per row still leaves them 4-way, however fast it runs; swizzle the float4 "
                     "columns by the row");
}

TEST_CASE("step 4: transpose_wide reaches kWideOverMemcpy of cudaMemcpy", "[ch05][step4][perf]") {
  check_transpose_speed(ch05::transpose_wide, "transpose_wide", memcpy_d2d, "cudaMemcpy device to device",
                        kWideOverMemcpy, "16-byte accesses end to end, and no conflict (step 4; ./lab hint 05)");
}

TEST_CASE("step 4: transpose_wide_kernel has no shared-memory race (racecheck)", "[ch05][step4][mechanism]") {
  cml::test::device();
  CML_CHECK_SANITIZER("racecheck", "transpose_wide_kernel", race_found("transpose_wide_kernel", "step 4"));
}

// ---- What the chapter provides ---------------------------------------------------------------

// Not the learner's: the chapter's sector-aligned transpose, shown beside the steps in the
// program's table. Its shapes include rows of every length mod 8 (the shift it computes).
TEST_CASE("the chapter's transpose_aligned transposes square, non-square and ragged matrices", "[ch05][correctness]") {
  cml::test::device();
  std::vector<ch05::Shape> shapes = ch05::checked_shapes();
  for (int rows = 57; rows < 65; ++rows) shapes.push_back({rows, 3 * rows + 1, "every row length mod 8"});
  check_shapes(ch05::transpose_aligned, "transpose_aligned", shapes,
               "the chapter's transpose_aligned, not a step of yours");
}

// ---- The bank model against the hardware -------------------------------------------------

TEST_CASE("the bank model predicts ncu's wavefronts and conflicts for every access-width experiment",
          "[ch05][mechanism][profile][model]") {
  cml::test::device();
  std::string why;
  const auto measured = profiled("experiments", why);
  CML_REQUIRE_NCU(measured, why);
  const auto& ex = ch05::experiments();
  INFO("ncu profiled " << measured.size() << " experiments of " << ex.size()
                       << (why.empty() ? "" : "; the profiled run said: " + why));
  REQUIRE(measured.size() == ex.size());
  for (std::size_t i = 0; i < ex.size(); ++i) {
    const auto m = ex[i].model();
    const int base = ex[i].store ? ch05::kStWavefronts : ch05::kLdWavefronts;
    INFO(ex[i].name << " (" << ex[i].shows << "): model " << cml::describe(m) << "; ncu " << metric(measured[i], base)
                    << " wavefronts, " << metric(measured[i], base + 1) << " conflicts, "
                    << metric(measured[i], base + 2)
                    << " instructions. A difference is a rule of cml/banks.hpp to fix (and the lesson to correct)");
    CHECK(metric(measured[i], base + 2) == 1);  // one access under test: nvcc did not split it
    CHECK(metric(measured[i], base) == m.wavefronts);
    CHECK(metric(measured[i], base + 1) == m.conflicts);
  }
}
