// Chapter 09's test helpers (tests/test_09_sgemm.cpp includes this, and nothing else does):
// the steps' results against the CPU, Nsight Compute's counters, the SASS, the racecheck and
// read-past-the-end checks, and the speed checks (of cuBLAS, and of the learner's step before).
// The cases, the contract-case macro and the speed bars are in the .cpp.
#pragma once

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
#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdio>
#include <map>
#include <optional>
#include <regex>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

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
// ragged shape of the lists stays; only the largest go (513 x 517 x 519, 1409 x 1409 x 133, the
// Gram 300 and 513). So the sanitizers see step 6's 128 x 128 instance only: the solution's
// rule gives these small shapes no other tile (docs/09_sgemm.md, "Waves").
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

// The largest arrival count any mbarrier.init of `ptx` (one kernel's) gives, where the count
// is a constant: written in the instruction, or moved into its register (mov.u32 %rN, K;)
// before it. 0 when none is known.
inline unsigned largest_mbarrier_count(const std::string& ptx) {
  static const std::regex init(R"(mbarrier\.init[^\[]*\[[^\]]*\],\s*(%r\d+|\d+)\s*;)");
  unsigned most = 0;
  for (auto it = std::sregex_iterator(ptx.begin(), ptx.end(), init); it != std::sregex_iterator(); ++it) {
    const std::string operand = (*it)[1];
    unsigned count = 0;
    if (operand[0] != '%') {
      count = static_cast<unsigned>(std::stoul(operand));
    } else {  // the last constant moved into that register before the init
      const std::string before = ptx.substr(0, static_cast<std::size_t>(it->position()));
      const std::regex mov("mov\\.[us]32\\s+" + operand + ",\\s*(\\d+)\\s*;");
      for (auto m = std::sregex_iterator(before.begin(), before.end(), mov); m != std::sregex_iterator(); ++m)
        count = static_cast<unsigned>(std::stoul((*m)[1]));
    }
    most = std::max(most, count);
  }
  return most;
}

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

// The timed problem's result, before its time is judged: a kernel right on every checked
// shape can take another path on a large one (a tile chosen by the shape, more blocks than
// one wave), and the checked shapes are all small. Every element of C against cuBLAS's
// result of the same problem (cuBLAS itself against the CPU on a sample first), as the
// program's --mode=table does.
void check_timed_result(const Variant& v, const ch09::Problem& p, ch09::Cublas& cublas) {
  cml::Stream s;
  const ch09::CublasResult ceiling = ch09::checked_cublas(cublas, p, s);
  {
    INFO("cuBLAS on " << ch09::describe(p.shape()) << " against the CPU: " << ceiling.against_cpu.describe()
                      << " (the ceiling itself is wrong here: not your code)");
    REQUIRE(ceiling.against_cpu.ok);
  }
  const ch09::Reference want = ch09::cublas_reference(p, ceiling.c.c);
  const ch09::Report r = ch09::run_and_compare(
      p, [&](cudaStream_t st) { ch09::run(v, p, st); }, want, s);
  INFO(v.label() << " on " << ch09::describe(p.shape())
                 << ", the speed bar's problem, against cuBLAS: " << verdict(v, p, want, r, s)
                 << ". Right on the checked shapes and wrong on this one: look for a path that only a large problem "
                    "takes (a tile or a grid chosen by the shape, blocks past the first wave) ("
                 << step_text(v.step) << ")");
  REQUIRE(r.ok);
}

// v's GFLOP/s at `bar` of cuBLAS's or more, timed interleaved in one process, once its result
// on that problem is right.
void check_speed(const Variant& v, double bar, const char* advice) {
  cml::test::device();
  const int side = speed_side();
  const Shape shape = v.is_gram() ? ch09::gram_shape(side, side) : ch09::gemm_shape(side, side, side);
  const ch09::Problem p(shape);
  ch09::Cublas cublas;
  check_timed_result(v, p, cublas);
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

}  // namespace
