// Chapter 09 — what the program's modes share: the settings from the command line, the run,
// a stream and one cuBLAS handle, the measurement of every function at one shape (checked
// against cuBLAS, then timed interleaved: measure.cu), and the modes themselves
// (modes_check.cu: every function against the CPU; modes_time.cu: the tables against
// cuBLAS; modes_roofline.cu: the roofline of this GPU; modes_ceiling.cu: which cuBLAS is
// the ceiling). main.cu parses and dispatches.
#pragma once

#include "harness.hpp"
#include "sgemm.cuh"

#include "cml/needs.hpp"
#include "cml/run.hpp"
#include "cml/stream.hpp"
#include "cml/timing.hpp"

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace ch09 {

struct Settings {
  std::string mode = "all";
  int m = 4096, n = 4096, k = 4096;  // the timed shape (--m, --n, --k)
  int size = 4096;                   // --size: m = n = k
};

// The size --mode=all times when no size is given: a moderate one, so a plain run is quick.
inline constexpr int kAllModeSize = 2048;
// --mode=roofline's copy: each of its two buffers (far beyond any L2, so DRAM is measured).
inline constexpr std::uint64_t kCopyBytes = 512ull << 20;
// --mode=roofline's FMA kernel: blocks per SM (4 waves of 8 blocks of 256 threads, a full
// SM each), and iterations (about 10 ms on an H100).
inline constexpr int kFmaBlocksPerSm = 32;
inline constexpr int kFmaIterations = 2048;
// The L2 and shared-memory lines: 8 blocks of reads per SM; the L2's buffer a quarter of
// the L2 (it stays there between passes), read 64 times; the shared reads 4096 x 16 loads
// a thread.
inline constexpr int kReadBlocksPerSm = 8;
inline constexpr int kL2Passes = 64;
inline constexpr int kSharedIterations = 4096;
// What cuBLAS keeps beside the matrices: its workspace (provided.cu) and some room.
inline constexpr std::uint64_t kCublasBytes = 64ull << 20;

struct Context {
  const Settings& s;
  Shape shape;  // the timed shape (table, roofline; gram takes its m and k)
  cml::Run run;
  cml::Stream stream{cudaStreamNonBlocking};
  Cublas cublas{};  // one handle for the whole run: creating one costs milliseconds

  // Why `v` cannot run on this GPU ("" when it can): what needs.txt says its step needs.
  std::string missing(const Variant& v) const { return cml::needs::missing_for("09", v.step, run.facts); }
  bool can_run(const Variant& v) const { return missing(v).empty(); }
};

// One row of a timed comparison: a function or cuBLAS, its check, its time.
struct Timed {
  std::string name;    // "sgemm_tiled (step 1)", "cuBLAS"
  int step = -1;       // -1: cuBLAS
  std::string status;  // "ok" when checked and timed; else why not ("wrong", "skipped: ...")
  cml::Stats stats;
  bool timed() const { return status == "ok"; }
};

// Every function that computes `shape` (the Gram step for a Gram shape; the naive kernel
// and steps 1, 3, 4, 5, 6 for a product) and cuBLAS: cuBLAS checked against the CPU on a
// sample, each function's result against cuBLAS's (every element, the error bound of
// harness.hpp), then the right ones timed interleaved with cuBLAS. A wrong result is
// printed and not timed; `ok` turns false. Rows in the variants' order, cuBLAS last.
std::vector<Timed> measure(Context& c, const Shape& shape, bool& ok);
// The row of cuBLAS (the last), and a row's fraction of its speed ("-" when not timed).
const Timed& cublas_row(const std::vector<Timed>& rows);
std::string of_cublas(const Timed& row, const std::vector<Timed>& rows);

bool check_mode(Context& c);     // every function against the CPU on the checked shapes
bool table_mode(Context& c);     // the steps against cuBLAS at the timed shape
bool gram_mode(Context& c);      // step 2 against cuBLAS's A Aᵀ
bool shapes_mode(Context& c);    // 4096³, 8192³ and a ragged shape (./lab bench 09)
bool roofline_mode(Context& c);  // this GPU's FMA peak and DRAM bandwidth, and every kernel on them
bool ceiling_mode(Context& c);   // which cuBLAS call is fastest at the timed shape (modes_ceiling.cu)

}  // namespace ch09
