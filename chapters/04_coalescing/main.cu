// Chapter 04 — global memory coalescing (CUDA C++ Best Practices Guide §9.2.1). Measures
// your copies against cudaMemcpy, sweeps the offset and the stride of a copy with the
// sector model's prediction beside each measurement, and compares records with arrays.
//
//   ./lab run 04                         everything, with your exercise.cu
//   ./lab run 04 -- --mode=offset        one part: copies | offset | stride | sizes | particles
//   ./lab run 04 -- --mode=vector        what reaching cudaMemcpy with float4 takes (docs/04)
//   ./lab run 04 -- --size=2G            a larger working set (default 512 MiB)
//   ./lab run 04 -- --dram               also the sweeps' L2 and DRAM counters, from ncu
//   ./lab run 04 -- --mode=permuted      lanes reading their segment out of order (docs/04)
//   ./lab run 04 -- --mode=l2-persist    a table kept in L2 by an access policy window (docs/04)
#include "coalescing.cuh"
#include "harness.hpp"
#include "program/checked.hpp"
#include "program/l2_persist.hpp"
#include "program/permuted.hpp"
#include "program/sweep_counters.hpp"
#include "program/vector_variants.hpp"

#include "cml/errors.hpp"
#include "cml/exit_codes.hpp"
#include "cml/program.hpp"
#include "cml/run.hpp"
#include "cml/stream.hpp"

#include <cstdint>
#include <cstdio>
#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace {

using ch04::Pattern;
using cml::fixed;

// The modes ncu runs this program in: each launches its kernels once and checks nothing.
constexpr const char* kProfileTarget = "profile-target";  // --dram's: the sweeps
constexpr const char* kPermutedTarget = "permuted-target";
constexpr const char* kPersistTarget = "l2-persist-target";

struct Settings {
  std::string mode = "all";
  std::size_t bytes = 512ull << 20;
  bool dram = false;
  std::uint64_t table_bytes = 0;  // --mode=l2-persist's table; 0: chosen from the device
};

// What every mode works with: the settings, the run, two buffers of --size and a stream.
struct Context {
  const Settings& s;
  const cml::Run& run;
  ch04::Arrays& arrays;
  cudaStream_t stream;
  std::optional<double> ceiling_gbps;

  cml::Stats time(const cml::Work& w) const { return cml::time_work(w, stream, run.timing); }

  // cudaMemcpy device to device over the whole buffer (read + written bytes), the ceiling
  // every copy is compared with: measured, printed and written the first time a mode asks
  // (profile-target never does: under ncu only the sweep kernels run).
  double memcpy_gbps() {
    if (ceiling_gbps) return *ceiling_gbps;
    const cml::Stats st = time(arrays.memcpy_work(arrays.in.size()));
    const double gbps = cml::gbps(2 * s.bytes, st.median_ms), peak = run.facts.dram_peak_gbps();
    std::printf(
        "cudaMemcpy device to device: %.0f GB/s (read + write, noise %s) = %.3f of the %.0f GB/s peak from "
        "the device's attributes\n",
        gbps, cml::format_noise(st).c_str(), gbps / peak, peak);
    cml::Table c("ceiling", {"cudaMemcpy GB/s", "noise", "peak GB/s"});
    c.row({fixed(gbps, 1), cml::format_noise(st), fixed(peak, 1)});
    run.write("ceiling.csv", c.csv_text());
    ceiling_gbps = gbps;
    return gbps;
  }
};

// Runs w once over a poisoned output and checks it. Prints the result (with say_passed,
// or when wrong) and returns whether it was right.
bool run_and_check(Context& c, const cml::Work& w, const std::function<cml::VerifyResult()>& check,
                   const std::string& what, bool say_passed = true) {
  return ch04::run_checked(c.arrays, c.stream, w, check, what, say_passed);
}

// ---- Modes -------------------------------------------------------------------------------------

bool run_copies(Context& c) {
  const std::size_t n = c.s.bytes / 4;
  ch04::Arrays& a = c.arrays;
  const double memcpy_gbps = c.memcpy_gbps(), peak = c.run.facts.dram_peak_gbps();
  std::printf("\n== Your copies of %s (read + written bytes counted) ==\n", cml::format_bytes(c.s.bytes).c_str());
  bool ok = true;
  cml::Table t("copies", {"copy", "ms", "noise", "GB/s", "of cudaMemcpy", "of peak"});
  const std::vector<std::pair<std::string, cml::Work>> copies = {
      {"cudaMemcpy device to device", a.memcpy_work(n)},
      {"copy_coalesced (yours)", [&](cudaStream_t st) { ch04::copy_coalesced(a.in.data(), a.out.data(), n, st); }},
      {"copy_vectorized (yours)", [&](cudaStream_t st) { ch04::copy_vectorized(a.in.data(), a.out.data(), n, st); }},
  };
  for (const auto& [name, work] : copies) {
    ok &= run_and_check(
        c, work, [&] { return a.verify_copy(Pattern{}, n); }, name);
    const cml::Stats st = c.time(work);
    const double gbps = cml::gbps(2 * c.s.bytes, st.median_ms);
    t.row({name, fixed(st.median_ms, 3), cml::format_noise(st), fixed(gbps, 0), fixed(gbps / memcpy_gbps, 3),
           fixed(gbps / peak, 3)});
  }
  c.run.emit(t);
  return ok;
}

// What reaching cudaMemcpy with 16-byte accesses takes (docs/04, "The last few percent"):
// the learner's copy beside the variants of program/vector_variants.cu, interleaved with
// cudaMemcpy.
bool run_vector(Context& c) {
  const std::size_t n = c.s.bytes / 4;  // s.bytes is a multiple of 1 KiB
  ch04::Arrays& a = c.arrays;
  std::printf("\n== 16-byte copies of %s: what the last percent takes (interleaved with cudaMemcpy) ==\n",
              cml::format_bytes(c.s.bytes).c_str());
  std::vector<ch04::NamedCopy> variants = {
      {"cudaMemcpy device to device", a.memcpy_work(n)},
      {"copy_vectorized (yours)", [&](cudaStream_t st) { ch04::copy_vectorized(a.in.data(), a.out.data(), n, st); }},
  };
  for (auto& v : ch04::vector_variants(a.in.data(), a.out.data(), n)) variants.push_back(std::move(v));
  bool ok = true;
  std::vector<cml::Work> works;
  for (const auto& [name, work] : variants) {
    const cml::Work checked = [&, w = work](cudaStream_t st) {
      w(st);
      CUDA_CHECK_LAUNCH();
    };
    ok &= run_and_check(
        c, checked, [&] { return a.verify_copy(Pattern{}, n); }, name, false);
    works.push_back(checked);
  }
  const std::vector<cml::Stats> st = cml::time_interleaved(works, c.stream, c.run.timing);
  cml::Table t("vector", {"copy", "ms", "noise", "GB/s", "of cudaMemcpy"});
  for (std::size_t k = 0; k < variants.size(); ++k)
    t.row({variants[k].first, fixed(st[k].median_ms, 3), cml::format_noise(st[k]),
           fixed(cml::gbps(2 * c.s.bytes, st[k].median_ms), 0), cml::ratio_text(st[0], st[k])});
  c.run.emit(t);
  return ok;
}

// An offset or stride sweep of float copies, with the model's L1 efficiency beside each.
bool run_sweep(Context& c, const char* name, const std::vector<Pattern>& sweep) {
  const double memcpy_gbps = c.memcpy_gbps();
  std::printf("\n== Copy of floats over %s, %ss %zu..%zu%s ==\n", cml::format_bytes(c.s.bytes).c_str(), name,
              sweep.front().k, sweep.back().k,
              sweep.front().kind == Pattern::Stride ? " (output = input / stride)" : "");
  bool ok = true;
  cml::Table t(name, {name, "ms", "noise", "GB/s", "of cudaMemcpy", "model sectors/request", "model efficiency"});
  for (const Pattern& p : sweep) {
    const std::size_t n = ch04::sweep_n(p, c.s.bytes);
    const cml::Work w = [&](cudaStream_t st) { p.launch(c.arrays.in.data(), c.arrays.out.data(), n, st); };
    if (p.k <= 2 || p.k + 1 >= ch04::kSweepMax)  // the first few and the last two checked in full
      ok &= run_and_check(
          c, w, [&] { return c.arrays.verify_copy(p, n); }, p.name());
    const cml::Stats st = c.time(w);
    // Effective bandwidth counts the bytes the program wanted: n read and n written.
    const double gbps = cml::gbps(2 * n * p.elem_bytes, st.median_ms);
    t.row({std::to_string(p.k), fixed(st.median_ms, 3), cml::format_noise(st), fixed(gbps, 0),
           fixed(gbps / memcpy_gbps, 3), fixed(p.model_sectors_per_request(), 2), fixed(p.model_efficiency(), 3)});
  }
  c.run.emit(t);
  return ok;
}

bool run_offsets(Context& c) { return run_sweep(c, "offset", ch04::offset_sweep()); }
bool run_strides(Context& c) { return run_sweep(c, "stride", ch04::stride_sweep()); }

bool run_sizes(Context& c) {
  const double memcpy_gbps = c.memcpy_gbps();
  std::printf("\n== Element sizes 4, 8, 16 bytes: aligned, offset by one element, stride 2 ==\n");
  struct Case {
    const char* label;
    Pattern::Kind kind;
    std::size_t k;
  };
  const Case cases[] = {
      {"aligned", Pattern::Offset, 0}, {"offset 1", Pattern::Offset, 1}, {"stride 2", Pattern::Stride, 2}};
  bool ok = true;
  cml::Table t("sizes", {"element bytes", "pattern", "GB/s", "noise", "of cudaMemcpy", "model sectors/request",
                         "model efficiency"});
  for (const unsigned elem : {4u, 8u, 16u}) {
    const std::size_t n = c.s.bytes / elem / 2 - 1;  // stride 2 reads twice n elements
    for (const Case& cs : cases) {
      const Pattern p{cs.kind, cs.k, elem};
      const cml::Work w = [&](cudaStream_t st) { p.launch(c.arrays.in.data(), c.arrays.out.data(), n, st); };
      ok &= run_and_check(
          c, w, [&] { return c.arrays.verify_copy(p, n); }, p.name(), false);
      const cml::Stats st = c.time(w);
      const double gbps = cml::gbps(2 * n * elem, st.median_ms);
      t.row({std::to_string(elem), cs.label, fixed(gbps, 0), cml::format_noise(st), fixed(gbps / memcpy_gbps, 3),
             fixed(p.model_sectors_per_request(), 2), fixed(p.model_efficiency(), 3)});
    }
  }
  c.run.emit(t);
  return ok;
}

bool run_particles(Context& c) {
  const double memcpy_gbps = c.memcpy_gbps();
  const std::size_t n = c.s.bytes / sizeof(ch04::Particle);
  std::printf("\n== %zu particles: 64-byte records against arrays (x += vx * dt, for x, y, z) ==\n", n);
  ch04::Particles p(n);
  const float dt = 0.25f;  // exact in binary: the results compare exactly
  ch04::advance_soa(p.soa, n, dt, c.stream);
  CUDA_CHECK(cudaStreamSynchronize(c.stream));
  bool ok = true;
  for (int axis = 0; axis < 3; ++axis)
    ok &= cml::report(p.verify_axis(axis, dt), std::string("advance_soa (yours), ") + "xyz"[axis]);
  const auto st = cml::time_interleaved({[&](cudaStream_t x) { ch04::advance_aos(p.aos.data(), n, dt, x); },
                                         [&](cudaStream_t x) { ch04::advance_soa(p.soa, n, dt, x); }},
                                        c.stream, c.run.timing);
  const std::size_t useful = n * (24 + 12);  // read position and velocity, write position
  cml::Table t("particles", {"layout", "ms", "noise", "useful GB/s", "of cudaMemcpy", "speed-up"});
  const char* layouts[] = {"records (array of structures)", "arrays (structure of arrays, yours)"};
  for (std::size_t k = 0; k < 2; ++k) {
    const double gbps = cml::gbps(useful, st[k].median_ms);
    t.row({layouts[k], fixed(st[k].median_ms, 3), cml::format_noise(st[k]), fixed(gbps, 0),
           fixed(gbps / memcpy_gbps, 3), fixed(st[0].median_ms / st[k].median_ms, 2)});
  }
  c.run.emit(t);
  return ok;
}

// Each sweep kernel launched once, in order (offsets, then strides): what --dram profiles.
bool run_profile_target(Context& c) {
  for (const auto& sweep : {ch04::offset_sweep(), ch04::stride_sweep()})
    for (const Pattern& p : sweep)
      p.launch(c.arrays.in.data(), c.arrays.out.data(), ch04::sweep_n(p, c.s.bytes), c.stream);
  CUDA_CHECK(cudaStreamSynchronize(c.stream));
  return true;
}

bool run_permuted(Context& c) { return ch04::run_permuted(c.run, c.s.bytes, c.arrays, c.stream, kPermutedTarget); }

bool run_permuted_target(Context& c) {
  ch04::launch_permuted_copies(c.arrays, c.stream);
  return true;
}

bool run_l2_persist(Context& c) {
  return ch04::run_l2_persist(c.run, c.s.bytes, ch04::l2_table_bytes(c.s.table_bytes, c.run.facts), c.arrays,
                              kPersistTarget);
}

bool run_l2_persist_target(Context& c) {
  ch04::launch_l2_persist(c.run, ch04::l2_table_bytes(c.s.table_bytes, c.run.facts), c.arrays);
  return true;
}

bool run_dram(Context& c) {
  ch04::print_sweep_counters(c.run, c.s.bytes, c.arrays, c.stream, kProfileTarget);
  return true;
}

const std::vector<cml::Mode<Context>> kModes = {
    {"copies", "your copies against cudaMemcpy", run_copies},
    {"offset", "the offset sweep", run_offsets},
    {"stride", "the stride sweep", run_strides},
    {"sizes", "element sizes 4, 8, 16 bytes", run_sizes},
    {"particles", "records against arrays", run_particles},
    {"vector", "16-byte copies: grid shape, loads in flight, cache hints (not in all)", run_vector, false},
    {"permuted",
     "lanes reading their warp's segment out of order, and other warps' segments; ncu's sectors "
     "(not in all)",
     run_permuted, false},
    {"l2-persist", "a table kept in L2 by an access policy window while a stream passes; ncu's hit rate (not in all)",
     run_l2_persist, false},
    {kProfileTarget, "each sweep kernel once, for ncu", run_profile_target, false},
    {kPermutedTarget, "each permuted copy once, for ncu", run_permuted_target, false},
    {kPersistTarget, "the table's kernel without and with the window, for ncu", run_l2_persist_target, false},
};

int run(int argc, char** argv) {
  Settings s;
  cml::Cli cli =
      cml::chapter_cli("04",
                       "Chapter 04 - global memory coalescing: your copies against cudaMemcpy, offset and stride\n"
                       "sweeps beside the sector model, element sizes, records against arrays.",
                       kModes, s.mode);
  cli.size("size", s.bytes, 1 << 20, 1ull << 40, "working set per buffer (far above L2, so DRAM is measured)")
      .flag("dram", s.dram, "also read the sweeps' L2 and DRAM counters with Nsight Compute (ncu)")
      .size("table", s.table_bytes, 0, 1ull << 30,
            "the table --mode=l2-persist keeps in L2; 0: a quarter of the L2, at most what the device lets persist");
  if (!cli.parse(argc, argv)) return cml::kExitOk;
  s.bytes = s.bytes / 1024 * 1024;
  if (s.table_bytes != 0 && s.table_bytes < (64u << 10))
    throw cml::UsageError("--table=" + cml::format_bytes(s.table_bytes) + ": the table needs at least 64 KiB (or 0)");

  const bool under_ncu = s.mode == kProfileTarget || s.mode == kPermutedTarget || s.mode == kPersistTarget;
  const cml::Run run = cml::open_run(
      cli,
      [&](const cml::DeviceFacts& facts) {
        // Two buffers of s.bytes, then the particles as records and as arrays: 3.5 x s.bytes;
        // and --table's table where one is asked for (the default is a part of L2: small).
        const auto needed = [&](std::uint64_t bytes) { return bytes / 2 * 7 + s.table_bytes; };
        if (!cli.given("size")) {
          // The default working set shrinks on a GPU with less free memory, down to 16 MiB; a
          // size asked for does not (it fits, or the command line was wrong: exit 2).
          while (needed(s.bytes) + cml::kDeviceHeadroom > facts.free_bytes && s.bytes > (16ull << 20)) s.bytes /= 2;
          if (needed(s.bytes) + cml::kDeviceHeadroom > facts.free_bytes)
            throw cml::Skip(facts.name + " has " + cml::format_bytes(facts.free_bytes) +
                            " of device memory free; chapter "
                            "04 needs " +
                            cml::format_bytes(needed(s.bytes) + cml::kDeviceHeadroom) +
                            " at least (is another process using the GPU?)");
        }
        return cml::Footprint{needed(s.bytes), s.table_bytes == 0
                                                   ? "--size (two buffers, the particles as records and as arrays)"
                                                   : "--size and --table (two buffers, the particles, the table)"};
      },
      under_ncu);
  if (s.bytes < 4 * run.facts.l2_bytes && !under_ncu)
    std::printf("note: %s is less than 4x the %s L2: the figures measure L2 more than DRAM\n",
                cml::format_bytes(s.bytes).c_str(), cml::format_bytes(run.facts.l2_bytes).c_str());

  cml::Stream stream;
  ch04::Arrays arrays(s.bytes / 4);
  Context context{s, run, arrays, stream, {}};
  bool ok = cml::run_modes(kModes, s.mode, context);
  if (s.dram) ok &= run_dram(context);
  return under_ncu ? cml::kExitOk : cml::finish(ok);
}

}  // namespace

int main(int argc, char** argv) {
  return cml::run_program([&] { return run(argc, argv); });
}
