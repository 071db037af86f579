// Chapter 09 — a tiled SGEMM: the tests of exercise.cu, step by step. Results against the
// CPU (every element of shapes up to 513 x 517 x 519, tolerance from K and FP32 rounding) on
// whole, ragged, non-square, K = 1, K = 0 and one-row/one-column shapes, with the inputs'
// pads poisoned (NaN) and C's pads and the rows after C watched; the contract's promises
// (sgemm.cuh: shapes refused before anything runs, one kernel on the stream given, nothing
// for an empty C); mechanism from the SASS of the learner's kernels (cuobjdump), Nsight
// Compute's counters (coalesced loads, no bank conflicts) and compute-sanitizer racecheck;
// speed as a fraction of cuBLAS SGEMM (FP32, pedantic) timed in the same process.
//
//   ./lab check 09                        against your exercise.cu
//   meson test -C build "ch09 solution"   against the solution
#include "harness.hpp"
#include "sgemm.cuh"
#include "api_calls.hpp"
#include "cuda_fault.hpp"
#include "enqueue_only.hpp"
#include "gpu.hpp"
#include "integrity.hpp"
#include "kernel_sass.hpp"
#include "ncu_evidence.hpp"
#include "sanitizer_target.hpp"
#include "speed_bar.hpp"
#include "stream_race.hpp"
#include "target_case.hpp"

#include "cml/buffers.hpp"
#include "cml/end_guard.hpp"
#include "cml/errors.hpp"
#include "cml/ncu.hpp"
#include "cml/sass.hpp"
#include "cml/stream.hpp"
#include "cml/timing.hpp"

#include <cmath>
#include <cstddef>
#include <cstdio>
#include <map>
#include <optional>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

CML_INTEGRITY_CASE(09, "09_sgemm")

namespace {

using ch09::Shape;
using ch09::Variant;

// The variant of the list by function name (the learner's steps and the provided kernel).
// A const char*, not a std::string: g++ 13 warns of a dangling reference when a function
// returning a reference is given a temporary.
const Variant& variant(const char* name) {
  for (const auto& v : ch09::variants())
    if (std::string(name) == v.name) return v;
  throw std::logic_error(std::string("no variant named ") + name);
}

std::string step_text(int step) { return "step " + std::to_string(step) + "; ./lab hint 09"; }

// ---- Results ---------------------------------------------------------------------------

// Under a compute-sanitizer setup every access is checked, thousands of times slower: shapes
// of more multiply-adds than this are left out there (and said so). Every edge, thin and
// ragged shape of the lists stays; only the largest go (513 x 517 x 519, the Gram 300 and 513).
// Racecheck, the slowest tool, also leaves out 300 x 200 x 128, so that its whole setup stays
// well inside 10 minutes (times in docs/09_sgemm.md): 1000 x 40 x 64 and 40 x 1000 x 64 keep
// ragged edges over whole k-tiles.
constexpr int kSanitizerMaxWorkLog2 = 23, kRacecheckMaxWorkLog2 = 22;

// The verdict on `r` (C read after `stream`'s work): "" when right, else what is wrong, or
// that the kernel ran on another stream when C comes right once the device has finished.
std::string verdict(const Variant& v, const ch09::Problem& p, const ch09::Reference& ref, const ch09::Report& r,
                    cudaStream_t stream) {
  return cml::test::named_if_elsewhere(v.name, r.ok ? std::string() : r.describe(), [&] {
    const ch09::Report again = ch09::compare(p, p.read_c(stream), ref);
    return again.ok ? std::string() : again.describe();
  });
}

// Every shape of the list through `v`, each against the CPU; shared memory scrubbed with NaN
// first, so a tile read before it is filled shows. The first failure's report, then what the
// failing shapes have in common.
void check_shapes(const Variant& v, const std::vector<Shape>& shapes) {
  cml::test::device();
  cml::Stream s;
  std::vector<ch09::ShapeVerdict> verdicts;
  std::string first;
  const std::string tool = cml::test::whole_run_sanitizer();
  const int max_log2 = tool == "racecheck" ? kRacecheckMaxWorkLog2 : kSanitizerMaxWorkLog2;
  for (const auto& shape : shapes) {
    if (!tool.empty() && ch09::flops(shape) / 2 > std::ldexp(1.0, max_log2)) {
      std::printf("%s on %s: left out under %s (over 2^%d multiply-adds)\n", v.label().c_str(),
                  ch09::describe(shape).c_str(), tool.c_str(), max_log2);
      continue;
    }
    const ch09::Problem p(shape);
    const auto ref = ch09::cpu_reference(p);
    ch09::scrub_shared_memory(s);
    const auto r = ch09::run_and_compare(
        p, [&](cudaStream_t st) { ch09::run(v, p, st); }, ref, s);
    const std::string err = verdict(v, p, ref, r, s);
    if (err == cml::test::ran_elsewhere(v.name)) {  // the first thing to fix, whatever the other shapes show
      first = ch09::describe(shape) + ": " + err;
      verdicts.clear();
      break;
    }
    verdicts.push_back({shape, r.ok});
    if (!r.ok && first.empty()) first = ch09::describe(shape) + ": " + err;
  }
  const std::string pattern = ch09::failure_pattern(verdicts);
  INFO(v.label() << ": " << first << (pattern.empty() ? "" : "\n" + pattern) << " (" << step_text(v.step) << ")");
  CHECK(first.empty());
}

// The promises of sgemm.cuh on bad shapes: std::invalid_argument, and nothing enqueued.
void check_refuses_bad_shapes(const Variant& v) {
  cml::test::device();
  cml::DeviceBuffer<float> buf(64 * 64);
  float* d = buf.data();
  struct Bad {
    ch09::ConstView a, b;
    ch09::View c;
    const char* what;
  };
  const std::vector<Bad> bad =
      v.is_gram() ? std::vector<Bad>{{{d, 8, 12, 12}, {}, {d, 8, 9, 12}, "C is not m x m"},
                                     {{d, 8, 12, 10}, {}, {d, 8, 8, 8}, "A's ld is not a multiple of 4"},
                                     {{d, 8, 12, 8}, {}, {d, 8, 8, 8}, "A's ld is below its cols"}}
                  : std::vector<Bad>{{{d, 8, 12, 12}, {d, 13, 8, 8}, {d, 8, 8, 8}, "A's cols differ from B's rows"},
                                     {{d, 8, 12, 12}, {d, 12, 8, 8}, {d, 9, 8, 8}, "C's rows differ from A's"},
                                     {{d, 8, 12, 12}, {d, 12, 8, 8}, {d, 8, 8, 6}, "C's ld is below its cols"},
                                     {{d, 8, 12, 14}, {d, 12, 8, 8}, {d, 8, 8, 8}, "A's ld is not a multiple of 4"}};
  for (const auto& b : bad) {
    INFO(v.label() << " must throw std::invalid_argument when " << b.what
                   << ", before it enqueues anything "
                      "(sgemm.cuh; "
                   << step_text(v.step) << ")");
    if (v.is_gram())
      CHECK_THROWS_AS(v.gram(b.a, b.c, nullptr), std::invalid_argument);
    else
      CHECK_THROWS_AS(v.gemm(b.a, b.b, b.c, nullptr), std::invalid_argument);
  }
  CUDA_CHECK(cudaDeviceSynchronize());
}

// One kernel on the stream given, and nothing for an empty C. Needs the trace.
void check_enqueues_only(const Variant& v) {
  cml::test::device();
  for (const auto& [shape, kernels] :
       {std::pair<Shape, std::size_t>{v.is_gram() ? ch09::gram_shape(70, 50) : ch09::gemm_shape(70, 90, 50), 1},
        {v.is_gram() ? ch09::gram_shape(0, 50) : ch09::gemm_shape(0, 90, 50), 0},
        {v.is_gram() ? ch09::gram_shape(70, 50) : ch09::gemm_shape(70, 0, 50), v.is_gram() ? 1u : 0u}}) {
    const ch09::Problem p(shape);  // allocated before the watch: cudaMalloc may wait
    CML_CHECK_ENQUEUE_ONLY(
        v.label() + " on " + ch09::describe(shape), [&](cudaStream_t s) { ch09::run(v, p, s); }, kernels,
        "sgemm.cuh: each function only enqueues its one kernel on `stream`; an empty C enqueues "
        "nothing");
  }
}

// ---- Nsight Compute ---------------------------------------------------------------------

// The counters the chapter reads: global loads (sectors per request: 4 for a warp reading
// 32 consecutive floats), shared loads (bank conflicts against wavefronts) and the FFMA
// they feed (thread-level: 32 a warp instruction where every lane works).
const std::vector<std::string>& metrics() {
  static const std::vector<std::string> m = {
      "l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum",
      "l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum",
      "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum",
      "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum",
      "smsp__inst_executed_op_shared_ld.sum",
      "sm__sass_thread_inst_executed_op_ffma_pred_on.sum",
  };
  return m;
}
enum Metric { kGlobalSectors, kGlobalRequests, kSharedConflicts, kSharedWavefronts, kSharedLoads, kThreadFfma };

// The learner's kernel of `v` once, profiled in this executable's [.target] case: its
// counters (one entry), or none and why.
std::vector<cml::ncu::KernelMetrics> profiled(const Variant& v, std::string& why_not) {
  const auto r = cml::ncu::profile({cml::sass::self_executable(), "[.target]"}, v.kernel, metrics(),
                                   {"CML_TRACE=off", "CML_ISOLATE=off", std::string("CML_TARGET=") + v.name});
  if (!r.ok) {
    why_not = r.error;
    return {};
  }
  for (const auto& k : r.kernels)
    if (k.kernel.find(v.kernel) != std::string::npos) return {k};
  why_not = std::string("ncu saw no kernel named ") + v.kernel + ": keep the kernel's name (sgemm.cuh)" +
            (r.trouble.empty() ? "" : "; the profiled run said: " + r.trouble);
  return {};
}

double value(const cml::ncu::KernelMetrics& k, Metric m) {
  const auto it = k.values.find(metrics()[m]);
  return it == k.values.end() ? -1.0 : it->second;
}

// The target's shape: whole tiles of every size the steps use, so the counters are of the
// steady state, not of ragged edges.
constexpr int kProfileSide = 1024;

// ---- SASS ---------------------------------------------------------------------------------

std::size_t count_16_byte_shared_loads(const cml::sass::Function& f) {
  return cml::sass::count(f, "LDS.128") + cml::sass::count(f, "LDS.U.128");
}

void check_no_local_memory(const cml::sass::Function& f, const Variant& v) {
  const std::size_t ldl = cml::sass::count(f, "LDL"), stl = cml::sass::count(f, "STL");
  INFO(v.kernel
       << " has " << ldl << " LDL and " << stl
       << " STL: its micro-tile (or an array of fragments) went to "
          "local memory — index register arrays only with compile-time indices (fully unrolled loops), and keep the "
          "micro-tile small enough for the register file ("
       << step_text(v.step) << ")");
  CHECK(ldl + stl == 0);
}

// ---- racecheck ------------------------------------------------------------------------------

std::string race_found(const Variant& v, const char* what) {
  return std::string("hazards in ") + v.kernel + ": " + what + " (" + step_text(v.step) + ")";
}

// ---- Reads past the end -----------------------------------------------------------------------

// A host matrix in device memory that ends where the mapped memory ends (rows x ld floats,
// a multiple of 16 bytes: nothing of slack), so a read past its last element faults.
class EndGuardedMatrix {
 public:
  explicit EndGuardedMatrix(const ch09::HostMatrix& h)
      : mem_(static_cast<std::size_t>(h.rows) * static_cast<std::size_t>(h.ld)),
        rows_(h.rows),
        cols_(h.cols),
        ld_(h.ld) {
    cml::upload(mem_.data(), h.data.data(), mem_.size());
  }
  ch09::ConstView view() const { return {mem_.data(), rows_, cols_, ld_}; }

 private:
  cml::EndGuarded<float> mem_;
  int rows_, cols_, ld_;
};

// Last tiles partial in every dimension and k not a multiple of 4; full tiles with a K
// tail; more k-tiles than any pipeline has stages; one element.
const std::vector<Shape>& end_shapes(bool gram) {
  static const std::vector<Shape> gemm = {ch09::gemm_shape(67, 71, 45), ch09::gemm_shape(128, 128, 37),
                                          ch09::gemm_shape(130, 33, 200), ch09::gemm_shape(1, 1, 1)};
  static const std::vector<Shape> gram_shapes = {ch09::gram_shape(67, 45), ch09::gram_shape(128, 37),
                                                 ch09::gram_shape(130, 200), ch09::gram_shape(1, 1)};
  return gram ? gram_shapes : gemm;
}

// `v` on end_shapes() with A (and B) copied to memory that ends at an unmapped range: no
// fault, and C as the CPU computes it (the harness's comparison). The first fault fails the
// case (the process's context is lost with it) with the shape, the CUDA error and `advice`.
void check_gemm_reads_stop_at_end(const Variant& v, const char* advice) {
  cml::test::device();
  if (const std::string why = cml::end_guard_unavailable(); !why.empty()) CML_SKIP(why);
  for (const Shape& shape : end_shapes(v.is_gram())) {
    const ch09::Problem p(shape);
    const EndGuardedMatrix a(p.a());
    const std::optional<EndGuardedMatrix> b =
        v.is_gram() ? std::nullopt : std::optional<EndGuardedMatrix>(std::in_place, p.b());
    cml::Stream s;
    ch09::Report r;
    const auto fault = cml::test::cuda_fault([&] {
      r = ch09::run_and_compare(
          p,
          [&](cudaStream_t st) {
            if (v.is_gram())
              v.gram(a.view(), p.c_view(), st);
            else
              v.gemm(a.view(), b->view(), p.c_view(), st);
          },
          ch09::cpu_reference_full(p), s);
    });
    if (fault)
      FAIL(v.label() << " on " << ch09::describe(shape) << " faulted: " << *fault << ". A"
                     << (v.is_gram() ? "" : " and B")
                     << " end where the mapped memory ends, so the kernel read past the last element: " << advice
                     << " (" << step_text(v.step) << ")");
    INFO(v.label() << " on " << ch09::describe(shape) << " with A" << (v.is_gram() ? "" : " and B")
                   << " ending at an unmapped page: " << verdict(v, p, ch09::cpu_reference_full(p), r, s) << " ("
                   << step_text(v.step) << ")");
    REQUIRE(r.ok);
  }
}

// ---- Speed ----------------------------------------------------------------------------------

// The side of the square problem the speed bars run on: 4096, or less where three matrices
// of it do not fit the free memory.
int speed_side() {
  const auto& d = cml::test::device();
  int side = 4096;
  while (side > 1024 && 4.0 * ch09::Problem::device_bytes(ch09::gemm_shape(side, side, side)) > d.free_bytes) side /= 2;
  return side;
}

// v's GFLOP/s at `bar` of cuBLAS's or more, timed interleaved in one process.
void check_speed(const Variant& v, double bar, const char* advice) {
  cml::test::device();
  const int side = speed_side();
  const Shape shape = v.is_gram() ? ch09::gram_shape(side, side) : ch09::gemm_shape(side, side, side);
  const ch09::Problem p(shape);
  ch09::Cublas cublas;
  const auto st = cml::test::time_together(
      {[&](cudaStream_t s) { ch09::run_cublas(cublas, p, s); }, [&](cudaStream_t s) { ch09::run(v, p, s); }});
  cml::test::check_bar(st[0], st[1], bar, v.label() + " on " + ch09::describe(shape),
                       std::string("cuBLAS SGEMM (") + ch09::Cublas::math_mode() + ")",
                       std::string(": ") + advice + " (" + step_text(v.step) + ")");
}

// v's speed over `previous`'s (the learner's own step before it, on the same problem, timed
// interleaved with it and cuBLAS): at least `gain`, so a step that does not pay for itself
// fails even where its fraction of cuBLAS passes.
void check_gain(const Variant& v, const Variant& previous, double gain, const char* advice) {
  cml::test::device();
  const int side = speed_side();
  const ch09::Problem p(ch09::gemm_shape(side, side, side));
  ch09::Cublas cublas;
  const auto st = cml::test::time_together({[&](cudaStream_t s) { ch09::run_cublas(cublas, p, s); },
                                            [&](cudaStream_t s) { ch09::run(previous, p, s); },
                                            [&](cudaStream_t s) { ch09::run(v, p, s); }});
  INFO(previous.label() << ": " << cml::ratio_text(st[0], st[1]) << " of cuBLAS; " << v.label() << ": "
                        << cml::ratio_text(st[0], st[2]) << " of cuBLAS");
  cml::test::check_bar(st[1], st[2], gain, v.label() + " on " + ch09::describe(p.shape()), previous.label(),
                       std::string(": ") + advice + " (" + step_text(v.step) + ")");
}

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
// Step 3: above one result per thread (step 1's tile, 0.33), below plain register blocking.
// MEASURE: both sides of steps 3 and 4's bars are to be measured (issue 37), five runs each.
constexpr double kRegistersOfCublas = 0.45;
// Step 4: warp tiles over step 3's plain thread layout, and of cuBLAS, below the warp-tiled
// solution (0.78 on the H200).
constexpr double kWarpTiledOverRegisters = 1.05;
constexpr double kWarpTiledOfCublas = 0.6;
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
  const double per_request = value(k, kGlobalSectors) / value(k, kGlobalRequests);
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
  const double per_request = value(k, kGlobalSectors) / value(k, kGlobalRequests);
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

// Shared-load wavefronts per warp FFMA, from ncu: at most `bar`. Measured (H200, 4096^3): step
// 1's tile 0.75, the warp-tiled solution 0.19, step 6's solution and cuBLAS 0.16
// (docs/09_sgemm.md, steps 3 and 4).
void check_wavefronts_per_ffma(const Variant& v, double bar, const char* advice) {
  cml::test::device();
  std::string why;
  const auto measured = profiled(v, why);
  CML_REQUIRE_NCU(measured, why);
  const auto& k = measured.front();
  const double wavefronts = value(k, kSharedWavefronts), ffma = value(k, kThreadFfma) / 32.0;
  INFO(v.kernel << ": ncu counts " << wavefronts << " shared-load wavefronts for " << ffma << " warp FFMA, "
                << (ffma > 0 ? wavefronts / ffma : 0.0) << " a FFMA; want at most " << bar << ": " << advice << " ("
                << step_text(v.step) << "; ./lab hint 09)");
  CHECK(ffma > 0);
  CHECK(wavefronts <= bar * ffma);
}

// Step 3: well under step 1's tile (0.75), above a plain 16 x 16 thread layout. MEASURE.
constexpr double kRegistersWavefrontsPerFfma = 0.4;
// Step 4: under step 3's plain layout, above the warp-tiled solution (0.19). MEASURE.
constexpr double kWarpTiledWavefrontsPerFfma = 0.23;

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

TEST_CASE("step 4: sgemm_warp_tiled is faster than step 3's sgemm_registers", "[ch09][step4][perf]") {
  check_gain(variant("sgemm_warp_tiled"), variant("sgemm_registers"), kWarpTiledOverRegisters,
             "the warp tile must pay for itself: fewer wavefronts per FFMA than step 3's layout");
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
