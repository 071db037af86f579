// Chapter 05's test helpers (tests/test_05_shared_memory.cpp includes this, and nothing else
// does): the transposes' results, their SASS, Nsight Compute's bank counters and the racecheck
// targets. The cases and the speed bars are in the .cpp.
#pragma once

#include "harness.hpp"
#include "shared_memory.cuh"
#include "cuda_fault.hpp"
#include "enqueue_only.hpp"
#include "gpu.hpp"
#include "guarded_input.hpp"
#include "integrity.hpp"
#include "kernel_sass.hpp"
#include "launch_geometry.hpp"
#include "ncu_evidence.hpp"
#include "past_int_range.hpp"
#include "sanitizer_target.hpp"
#include "speed_bar.hpp"
#include "stream_race.hpp"
#include "target_case.hpp"
#include "cml/buffers.hpp"
#include "cml/errors.hpp"
#include "cml/guarded.hpp"
#include "cml/ncu.hpp"
#include "cml/sass.hpp"
#include "cml/stream.hpp"
#include "cml/timing.hpp"
#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <map>
#include <stdexcept>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

namespace {

using TransposeFn = void (*)(const float*, float*, int, int, cudaStream_t);

// Runs fn on a rows x cols matrix and checks the transpose, and that the poisoned guard
// after `out` is untouched. Returns "" when right, else what went wrong; `faulted` says the
// kernel faulted (every later call of the process fails too).
std::string transpose_error(TransposeFn fn, const char* name, int rows, int cols, bool& faulted) {
  using Out = cml::GuardedBuffer<float>;
  const std::size_t n = static_cast<std::size_t>(rows) * cols;
  std::vector<float> host(n);
  for (std::size_t i = 0; i < n; ++i) host[i] = ch05::element_value(i);
  const cml::test::GuardedInput<float> in(host);  // a load past its end faults
  const Out out(n);                               // poisoned, and landed before a kernel on a non-blocking stream
  cml::Stream s;
  const auto judge = [&] {
    std::vector<float> got;
    if (std::string past = out.read(got, "out", s); !past.empty()) return past;
    const auto r = ch05::check_transpose(got, rows, cols);
    if (r.ok) return std::string();
    return r.describe() + (Out::is_poison(got[r.first_bad]) ? " (no thread wrote that element)" : "");
  };
  std::string err;
  const auto fault = cml::test::cuda_fault([&] {
    fn(in.data(), out.data(), rows, cols, s);
    err = cml::test::judged_on_stream(name, judge);
  });
  faulted = fault.has_value();
  if (fault)
    return "the kernel faulted (" + *fault + ")" +
           in.read_past("in", "an edge tile's threads whose element lies outside the matrix", *fault);
  return err;
}

// Every shape of the list; a failure on a non-square shape after the square ones passed
// names the usual cause: rows and cols (or the tile's x and y) swapped somewhere.
void check_shapes(TransposeFn fn, const char* name, const std::vector<ch05::Shape>& shapes, const char* step) {
  bool square_ok = true;
  for (const auto& sh : shapes) {
    bool faulted = false;
    const std::string err = transpose_error(fn, name, sh.rows, sh.cols, faulted);
    const bool square = sh.rows == sh.cols;
    std::string advice;
    if (faulted || err == cml::test::ran_elsewhere(name))
      advice = "";  // the error says what to fix (and nothing after a fault can run)
    else if (!err.empty() && !square && square_ok)
      advice =
          ": square matrices pass, so rows and cols (or the tile's x and y) are swapped somewhere: in is "
          "rows x cols, out is cols x rows";
    else if (!err.empty() && sh.rows % ch05::kTile != 0)
      advice = ": a ragged shape (edge tiles are partial): read and write only inside the matrix";
    else if (!err.empty())
      advice =
          ": if only some elements are wrong, is the barrier between writing the tile and reading it there? "
          "does every element keep its own place in the tile (a swizzle must be a bijection, and the same on the "
          "store and on the load)?";
    INFO(sh.rows << " x " << sh.cols << " (" << sh.what << "): " << err << advice << " (" << step << ")");
    if (faulted) REQUIRE(err.empty());
    CHECK(err.empty());
    if (square && !err.empty()) square_ok = false;
  }
}

// The function only enqueues its kernel on the stream it is given, and an empty matrix
// nothing. Call from a [mechanism] case, after CML_REQUIRE_TRACING(): it needs the trace.
void check_enqueues_only(TransposeFn fn, const char* name) {
  cml::test::device();
  for (const auto& [rows, cols, kernels] : {std::tuple<int, int, std::size_t>{64, 96, 1}, {0, 96, 0}, {64, 0, 0}}) {
    const std::size_t n = static_cast<std::size_t>(rows > 0 ? rows : 1) * (cols > 0 ? cols : 1);
    cml::DeviceBuffer<float> in(n), out(n);  // allocated before the watch: cudaMalloc may wait
    CML_CHECK_ENQUEUE_ONLY(
        std::string(name) + " on " + std::to_string(rows) + " x " + std::to_string(cols),
        [&](cudaStream_t s) { fn(in.data(), out.data(), rows, cols, s); }, kernels,
        "shared_memory.cuh: each function only enqueues its kernel on `stream`; an empty matrix "
        "enqueues nothing");
  }
}

// The tile's side T of a step 1-3 kernel, read from its static shared memory as the
// program's bank model reads it; 0 when it cannot be read (no cuobjdump, another layout).
int tile_side_of(const char* kernel) {
  try {
    const auto f = cml::test::kernel_sass(kernel);
    int side = 0, pitch = 0;
    if (f && ch05::tile_from_static_shared(f->resources.shared, side, pitch)) return side;
  } catch (const cml::Skip&) {
  }
  return 0;
}

// Steps 1-3's grid (shared_memory.cuh): one block of 32 x 8 threads per T x T tile of the
// matrix, in any arrangement of the blocks; T read from the kernel's static shared memory
// (where it cannot be, a grid for 32 x 32 or for 64 x 64 tiles counts). Whole and ragged
// shapes, tall and wide, where a grid counted in the block's 8 rows, rounded up once too
// often or with rows for cols differs from the tiles' count. Call from a [mechanism] case,
// after CML_REQUIRE_TRACING().
void check_tile_grid(TransposeFn fn, const char* name, const char* kernel, const char* step) {
  cml::test::device();
  const int side = tile_side_of(kernel);
  for (const auto& [rows, cols] : {std::pair<int, int>{256, 96}, {200, 136}, {33, 1000}}) {
    CAPTURE(rows, cols);
    const std::size_t n = static_cast<std::size_t>(rows) * cols;
    cml::DeviceBuffer<float> in(n), out(n);
    const cml::test::Launched l =
        cml::test::launched_kernel(kernel, [&](cudaStream_t s) { fn(in.data(), out.data(), rows, cols, s); });
    {
      INFO(name << " on " << rows << " x " << cols << ": " << l.error << " (" << step << ")");
      REQUIRE(l.error.empty());
    }
    const auto tiles = [&](int side) {
      return cml::test::blocks_for(static_cast<std::uint64_t>(rows), static_cast<std::uint64_t>(side)) *
             cml::test::blocks_for(static_cast<std::uint64_t>(cols), static_cast<std::uint64_t>(side));
    };
    const std::uint64_t blocks = cml::test::volume(l.kernel.grid);
    const std::uint64_t most = tiles(side > 0 ? side : ch05::kTile), least = tiles(side > 0 ? side : 2 * ch05::kTile);
    const bool block_ok = l.kernel.block == std::array<std::int32_t, 3>{ch05::kTile, ch05::kBlockRows, 1};
    std::string why;
    if (!block_ok)
      why =
          "the block is 32 x 8 threads (kTile x kBlockRows): thread (tx, ty) moves rows ty, ty + 8, ... of a "
          "32-wide strip of the tile";
    else if (blocks > most)
      why =
          "too many blocks: the blocks past the matrix's tiles have no work. Count the tiles with the tile's side T "
          "(not the block's 8 rows), rounding up once: (rows + T - 1) / T of them down, (cols + T - 1) / T across";
    else if (blocks != most && blocks != least)
      why =
          "too few blocks: a tile with no block is never written. One block per tile: (rows + T - 1) / T of them "
          "down, (cols + T - 1) / T across";
    const std::string want =
        side > 0 ? std::to_string(most) + " blocks for its " + std::to_string(side) + " x " + std::to_string(side) +
                       " tiles (T read from the kernel's static shared memory)"
                 : std::to_string(most) + " blocks for 32 x 32 tiles, or " + std::to_string(least) + " for 64 x 64";
    INFO(name << " on " << rows << " x " << cols << ": your grid has " << blocks << " blocks ("
              << cml::test::dims_text(l.kernel.grid) << ") of " << cml::test::dims_text(l.kernel.block)
              << " threads; the contract wants one block of 32 x 8 threads per tile of the matrix, in any arrangement: "
              << want << ". " << why << " (" << step << "; ./lab hint 05)");
    CHECK(why.empty());
  }
}

// Step 4's grid: its tile and block are the learner's, but a block whose tile lies past the
// matrix only costs a launch. The tile's floats are read from the shared memory a block has
// (the trace's record: static and dynamic), so a grid counted in smaller tiles than the
// kernel's shows as blocks with no tile. Up to twice the blocks the tiles need passes (a pad,
// ragged edges); a grid for 32-wide tiles around a 64 x 64 tile is 4 times.
void check_wide_grid(const char* step) {
  cml::test::device();
  const int rows = 1024, cols = 2048;
  const std::size_t n = static_cast<std::size_t>(rows) * cols;
  cml::DeviceBuffer<float> in(n), out(n);
  const cml::test::Launched l = cml::test::launched_kernel(
      "transpose_wide_kernel", [&](cudaStream_t s) { ch05::transpose_wide(in.data(), out.data(), rows, cols, s); });
  {
    INFO("transpose_wide on " << rows << " x " << cols << ": " << l.error << " (" << step << ")");
    REQUIRE(l.error.empty());
  }
  const std::uint64_t tile_floats = static_cast<std::uint64_t>(l.kernel.shared_bytes) / sizeof(float);
  if (tile_floats == 0) return;  // no shared memory: the SASS case says what is missing
  const std::uint64_t blocks = cml::test::volume(l.kernel.grid), need = cml::test::blocks_for(n, tile_floats);
  INFO("transpose_wide on " << rows << " x " << cols << " launched " << cml::test::geometry_text(l.kernel) << ", with "
                            << l.kernel.shared_bytes << " bytes of shared memory a block: tiles of " << tile_floats
                            << " floats at most, so " << need << " blocks hold the matrix, and "
                            << blocks - std::min(blocks, 2 * need)
                            << " more than twice that have no tile to move. Count the grid in your kernel's own "
                               "tile side ("
                            << step << "; ./lab hint 05)");
  CHECK(blocks <= 2 * need);
}

// ---- SASS -------------------------------------------------------------------------------

// The 16-byte accesses of kind `op` (LDG, STG, LDS, STS) in f: LDS.128, LDS.U.128 (sm_75's
// form), LDG.E.128 and LDG.E.128.CONSTANT and the like.
std::size_t count_16_bytes(const cml::sass::Function& f, const std::string& op) {
  return cml::sass::count(f, op + ".128") + cml::sass::count(f, op + ".U.128") + cml::sass::count(f, op + ".E.128");
}

// ---- Nsight Compute ---------------------------------------------------------------------

// Runs this executable again under ncu on the hidden [.target] case, which launches what
// CML_TARGET names (experiments, kernels); the counters of each kernel, in launch order.
// why_not: why none, or, with some, what went wrong in the run (for a kernel missing). One
// profile per target and process: a case that reads two checks from it runs ncu once.
std::vector<cml::ncu::KernelMetrics> profiled(const char* what, std::string& why_not) {
  static std::map<std::string, std::pair<std::vector<cml::ncu::KernelMetrics>, std::string>> done;
  const auto found = done.find(what);
  if (found != done.end()) {
    why_not = found->second.second;
    return found->second.first;
  }
  const auto r = cml::ncu::profile({cml::sass::self_executable(), "[.target]"}, ch05::profiled_kernels(),
                                   ch05::transpose_metrics(),
                                   {"CML_TRACE=off", "CML_ISOLATE=off", std::string("CML_TARGET=") + what});
  why_not = r.ok ? r.trouble : r.error;
  const auto kernels = r.ok ? r.kernels : std::vector<cml::ncu::KernelMetrics>{};
  done[what] = {kernels, why_not};
  return kernels;
}

double metric(const cml::ncu::KernelMetrics& k, int m) {
  const auto it = k.values.find(ch05::transpose_metrics()[m]);
  return it == k.values.end() ? -1.0 : it->second;
}

// The learner's kernels as the [.target] case launches them (CML_TARGET=kernels), on the
// profile shape, in this order.
const std::vector<std::pair<const char*, TransposeFn>>& learner_kernels() {
  static const std::vector<std::pair<const char*, TransposeFn>> k = {
      {"transpose_tiled_kernel", ch05::transpose_tiled},
      {"transpose_padded_kernel", ch05::transpose_padded},
      {"transpose_swizzled_kernel", ch05::transpose_swizzled},
      {"transpose_wide_kernel", ch05::transpose_wide},
  };
  return k;
}

// One of the learner's kernels in a [.target] profile's counters; fails naming the kernel
// when it is not there. (The checks below call CML_REQUIRE_NCU themselves: a skip must
// return from the case's own function under Catch2 v2.)
const cml::ncu::KernelMetrics& kernel_in(const std::vector<cml::ncu::KernelMetrics>& measured, const char* kernel,
                                         const char* step, const std::string& why) {
  for (const auto& m : measured)
    if (m.kernel.find(kernel) != std::string::npos) return m;
  FAIL("ncu saw no kernel named " << kernel << ": keep the kernel's name (" << step << ")"
                                  << (why.empty() ? "" : "; the profiled run said: " + why));
  return measured.front();  // not reached: FAIL throws
}

// `fn` (the transpose `name`) over a rows x cols matrix of more than 2^31 floats, where the
// GPU has room (tests/support/past_int_range.hpp): an offset computed in int wraps there.
void check_transpose_past_int_range(void (*fn)(const float*, float*, int, int, cudaStream_t), const char* name,
                                    int rows, int cols, const char* step) {
  cml::test::check_past_int_range(
      std::string(name) + " of " + std::to_string(rows) + " x " + std::to_string(cols) + " floats",
      static_cast<std::size_t>(rows) * cols,
      [&](const float* in, float* out, cudaStream_t s) { fn(in, out, rows, cols, s); }, [](float x) { return x; },
      std::string(step) + "; ./lab hint 05");
}

// A tile transpose's point: its global loads and its stores both run along rows. A warp's 32
// 4-byte accesses along a row touch 4 sectors (fewer at a ragged edge); down a column, 32.
inline constexpr double kMostSectorsPerRequest = 8;

void check_rows_coalesced(const char* kernel, const char* step) {
  cml::test::device();
  std::string why;
  const auto measured = profiled("kernels", why);
  CML_REQUIRE_NCU(measured, why);
  const cml::ncu::KernelMetrics& m = kernel_in(measured, kernel, step, why);
  const auto& names = ch05::transpose_metrics();
  const double ld = cml::test::sectors_per_request(m, names[ch05::kGlobalLdSectors], names[ch05::kGlobalLdRequests]),
               st = cml::test::sectors_per_request(m, names[ch05::kGlobalStSectors], names[ch05::kGlobalStRequests]);
  if (ld < 0 || st < 0)
    FAIL("ncu reported no global " << (ld < 0 ? "load" : "store") << " requests for " << kernel
                                   << ": it must read in and write out (" << step << ")");
  INFO(kernel << ": " << ld << " sectors per global load request and " << st << " per store request; want at most "
              << kMostSectorsPerRequest
              << " (4 when a warp reads or writes 32 consecutive floats, 32 when it goes down a column): read the "
                 "input along its rows into the tile, and write the output along its rows from it; the transpose "
                 "happens in shared memory, between the two ("
              << step << "; ./lab hint 05)");
  CHECK(ld <= kMostSectorsPerRequest);
  CHECK(st <= kMostSectorsPerRequest);
}

// The shared accesses of one of the learner's kernels: no bank conflict beyond ncu's strays.
void check_no_conflicts(const char* kernel, const char* step, const char* advice, double want_static_shared = -1) {
  cml::test::device();
  std::string why;
  const auto measured = profiled("kernels", why);
  CML_REQUIRE_NCU(measured, why);
  const cml::ncu::KernelMetrics* k = &kernel_in(measured, kernel, step, why);
  const double ld = metric(*k, ch05::kLdConflicts), st = metric(*k, ch05::kStConflicts);
  if (metric(*k, ch05::kLdInst) <= 0 || metric(*k, ch05::kStInst) <= 0)
    FAIL(kernel << " made " << metric(*k, ch05::kStInst) << " shared stores and " << metric(*k, ch05::kLdInst)
                << " shared loads: it must stage its tile in shared memory (" << step << "; ./lab hint 05)");
  INFO(kernel << ": ncu counts " << ld << " bank conflicts in its shared loads and " << st << " in its stores ("
              << metric(*k, ch05::kLdWavefronts) << " and " << metric(*k, ch05::kStWavefronts) << " wavefronts, "
              << metric(*k, ch05::kLdInst) << " and " << metric(*k, ch05::kStInst)
              << " instructions); want none beyond " << 100 * ch05::kStrayConflictShare
              << " % of the instructions (ncu's stray count with many warps): " << advice << " (" << step
              << "; ./lab hint 05)");
  CHECK(ch05::within_stray(ld, 0, metric(*k, ch05::kLdInst)));
  CHECK(ch05::within_stray(st, 0, metric(*k, ch05::kStInst)));
  if (want_static_shared >= 0) {
    const double bytes = metric(*k, ch05::kStaticShared);
    INFO(kernel << " has " << bytes << " bytes of static shared memory; want " << want_static_shared
                << " (32 x 32 "
                   "floats) or "
                << 4 * want_static_shared << " (64 x 64): the tile stays exactly T x T floats, no pad (" << step
                << ")");
    CHECK((std::abs(bytes - want_static_shared) <= 10 || std::abs(bytes - 4 * want_static_shared) <= 20));
  }
}

// ---- compute-sanitizer racecheck ---------------------------------------------------------

// What racecheck's hazards in a step's kernel mean, and what to do (CML_CHECK_SANITIZER
// prints "compute-sanitizer racecheck found" before it, and the tool's report after).
std::string race_found(const char* kernel, const char* step) {
  return std::string("hazards in ") + kernel +
         ": a thread reads a tile element another warp writes, with no barrier "
         "between that write and this read — __syncthreads() after the whole tile is written, before any thread "
         "reads it (" +
         step + "; ./lab hint 05)";
}

}  // namespace
