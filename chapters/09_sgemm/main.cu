// Chapter 09 — a tiled SGEMM measured against cuBLAS: shared-memory tiles with coalesced
// loads, a conflict-free transposed operand, register blocking, a cp.async pipeline and TMA,
// each checked against the CPU and timed as a fraction of cuBLAS (FP32, no TF32), and the
// roofline of this GPU measured to place them on.
//
//   ./lab run 09                                    check every step, time them at 2048^3
//   ./lab run 09 -- --mode=table                    every step against cuBLAS at 4096^3
//   ./lab run 09 -- --mode=table --m=4097 --n=4093 --k=4091   a ragged shape
//   ./lab run 09 -- --mode=gram --m=4096 --k=4096   step 2 against cuBLAS's A A^T
//   ./lab run 09 -- --mode=roofline                 this GPU's FMA peak and DRAM line, every kernel on them
//   ./lab bench 09 -- --mode=shapes                 4096^3, 8192^3 and a ragged shape: shapes.csv, shapes.png
#include "program/modes.hpp"

#include "harness.hpp"
#include "sgemm.cuh"

#include "cml/errors.hpp"
#include "cml/exit_codes.hpp"
#include "cml/program.hpp"
#include "cml/run.hpp"

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

namespace {

using ch09::Context;
using ch09::Settings;
using ch09::Shape;

const std::vector<cml::Mode<Context>>& modes() {
  static const std::vector<cml::Mode<Context>> m = {
      {"check",
       "every step, the naive kernel and cuBLAS against the CPU: ragged, non-square, k = 1, one row or "
       "column, k = 0, m or n = 0",
       ch09::check_mode},
      {"table",
       "every step against cuBLAS at --m x --n x --k (default 4096^3; 2048^3 in a plain run): ms, GFLOP/s, "
       "fraction of cuBLAS, compulsory DRAM bytes, FLOP/byte",
       ch09::table_mode},
      {"gram", "step 2's C = A A^T against cuBLAS (b_transposed) at --m and --k", ch09::gram_mode, false},
      {"roofline", "this GPU's FP32 FMA peak and DRAM bandwidth, measured, and every kernel on them (roofline.csv)",
       ch09::roofline_mode, false},
      {"shapes", "every step against cuBLAS at 4096^3, 8192^3 and 4097 x 4093 x 4091 (for ./lab bench 09)",
       ch09::shapes_mode, false},
      {"ceiling",
       "which cuBLAS is the ceiling at --m x --n x --k: the pedantic call the bars use, the default math mode and "
       "cuBLASLt's FP32 algorithms, each checked, timed interleaved (ceiling.csv)",
       ch09::ceiling_mode, false},
  };
  return m;
}

// The timed shape from --size or --m/--n/--k; a plain run (--mode=all) without either times
// the moderate kAllModeSize.
Shape timed_shape(const cml::Cli& cli, const Settings& s) {
  const bool sides = cli.given("m") || cli.given("n") || cli.given("k");
  if (cli.given("size") && sides) throw cml::UsageError("give --size (a square problem) or --m, --n, --k, not both");
  if ((s.mode == "check" || s.mode == "shapes") && (sides || cli.given("size")))
    throw cml::UsageError("--mode=" + s.mode + " runs fixed shapes: --size, --m, --n and --k do not apply");
  if (s.mode == "gram" && cli.given("n"))
    throw cml::UsageError("--mode=gram: C = A A^T is m x m: give --m and --k (or --size), not --n");
  if (cli.given("size")) return ch09::gemm_shape(s.size, s.size, s.size, "--size");
  if (!sides && s.mode == "all")
    return ch09::gemm_shape(ch09::kAllModeSize, ch09::kAllModeSize, ch09::kAllModeSize, "a plain run's size");
  return ch09::gemm_shape(s.m, s.n, s.k);
}

// What a mode allocates at most, and the option that sets it: checked against the free
// device memory (cudaMemGetInfo) before anything is allocated.
cml::Footprint footprint(const Settings& s, const Shape& shape, bool sized_by_size) {
  const std::string sides = sized_by_size ? "--size" : "--m x --n x --k";
  if (s.mode == "check") return {ch09::kCublasBytes + (64ull << 20), "--mode=check (its shapes and cuBLAS)"};
  if (s.mode == "shapes") {
    std::uint64_t most = 0;
    for (const Shape& b : ch09::bench_shapes()) most = std::max(most, ch09::Problem::device_bytes(b));
    return {most + ch09::kCublasBytes, "--mode=shapes (8192^3: A, B and C, and cuBLAS's workspace)"};
  }
  if (s.mode == "gram") {
    const Shape g = ch09::gram_shape(shape.m, shape.k);
    return {ch09::Problem::device_bytes(g) + ch09::kCublasBytes,
            (sized_by_size ? "--size" : "--m x --k") + std::string(" (A and C = A A^T, and cuBLAS's workspace)")};
  }
  std::uint64_t bytes = ch09::Problem::device_bytes(shape);
  if (s.mode == "roofline") bytes = std::max<std::uint64_t>(bytes, 2 * ch09::kCopyBytes + (16ull << 20));
  return {bytes + ch09::kCublasBytes, sides + " (A, B and C with their guard rows, and cuBLAS's workspace" +
                                          std::string(s.mode == "roofline" ? "; the roofline's copy needs 1 GiB" : "") +
                                          ")"};
}

int run(int argc, char** argv) {
  Settings s;
  cml::Cli cli = cml::chapter_cli("09",
                                  "Chapter 09 - a tiled SGEMM measured against cuBLAS (FP32, no TF32): shared-memory "
                                  "tiles, a conflict-free\ntransposed operand, register blocking, a cp.async pipeline "
                                  "and TMA, each checked and timed as a fraction of\ncuBLAS, and the roofline of this "
                                  "GPU measured to place them on.",
                                  modes(), s.mode);
  constexpr int kMaxSide = 1 << 17;
  cli.integer("m", s.m, 1, kMaxSide, "rows of A and C (a plain run given no size: 2048)")
      .integer("n", s.n, 1, kMaxSide, "columns of B and C (a plain run given no size: 2048)")
      .integer("k", s.k, 1, kMaxSide,
               "columns of A, rows of B: the length of each sum (a plain run given no size: "
               "2048)")
      .integer("size", s.size, 1, kMaxSide, "a square problem: --m = --n = --k = this");
  if (!cli.parse(argc, argv)) return cml::kExitOk;
  const Shape shape = timed_shape(cli, s);
  Context c{s, shape, cml::open_run(cli, footprint(s, shape, cli.given("size")))};
  std::printf("cuBLAS math mode: %s\n", ch09::Cublas::math_mode());
  return cml::finish(cml::run_modes(modes(), s.mode, c));
}

}  // namespace

int main(int argc, char** argv) {
  return cml::run_program([&] { return run(argc, argv); });
}
