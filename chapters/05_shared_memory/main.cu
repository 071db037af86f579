// Chapter 05 — shared memory: banks, conflicts, padding, swizzling, access widths (CUDA
// C++ Best Practices Guide §9.2.2; the LDS-width notes). Checks your transposes on square,
// non-square and ragged shapes, times them against a copy of the same bytes, prints the
// bank model's prediction for each access-width experiment, and with --mode=profile
// compares the model with Nsight Compute's wavefront and conflict counters.
//
//   ./lab run 05                          check, time, experiments
//   ./lab run 05 -- --mode=profile        model against ncu, every experiment and kernel
//   ./lab run 05 -- --rows=8191 --cols=8191   time a shape whose rows are all misaligned
#include "harness.hpp"
#include "shared_memory.cuh"

#include "cml/buffers.hpp"
#include "cml/errors.hpp"
#include "cml/exit_codes.hpp"
#include "cml/ncu.hpp"
#include "cml/program.hpp"
#include "cml/run.hpp"
#include "cml/sass.hpp"
#include "cml/stream.hpp"
#include "cml/table.hpp"
#include "cml/timing.hpp"

#include <cstdio>
#include <string>
#include <vector>

namespace {

using cml::fixed;
using TransposeFn = void (*)(const float*, float*, int, int, cudaStream_t);

struct Settings {
  std::string mode = "all";
  int rows = 8192, cols = 8192;
  bool eight_byte_banks = false;
};

struct Context {
  const Settings& s;
  cml::Run run;
  cml::Stream stream{cudaStreamNonBlocking};
};

struct Kernel {
  const char* name;
  TransposeFn fn;
  bool wide;                                                               // rows and cols must be multiples of 4
  enum Model { kNone, kTileModel, kSwizzledTileModel, kWideModel } model;  // its row under the bank model
};
const std::vector<Kernel>& kernels() {
  static const std::vector<Kernel> k = {
      {"copy_tiles (a tile-shaped copy, not a transpose)", ch05::copy_tiles, false, Kernel::kNone},
      {"transpose_naive", ch05::transpose_naive, false, Kernel::kNone},
      {"transpose_tiled (yours, step 1)", ch05::transpose_tiled, false, Kernel::kTileModel},
      {"transpose_padded (yours, step 2)", ch05::transpose_padded, false, Kernel::kTileModel},
      {"transpose_swizzled (yours, step 3)", ch05::transpose_swizzled, false, Kernel::kSwizzledTileModel},
      {"transpose_wide (yours, step 4)", ch05::transpose_wide, true, Kernel::kWideModel},
      {"transpose_aligned (the chapter's: whole sectors written)", ch05::transpose_aligned, false, Kernel::kNone},
  };
  return k;
}

// in = element_value(i) for a rows x cols matrix; out poisoned; run; compare.
cml::VerifyResult run_and_check(const Kernel& k, int rows, int cols, cudaStream_t stream) {
  const std::size_t n = static_cast<std::size_t>(rows) * cols;
  std::vector<float> host(n);
  for (std::size_t i = 0; i < n; ++i) host[i] = ch05::element_value(i);
  cml::DeviceBuffer<float> in(n), out(n);
  cml::upload(in.data(), host.data(), n);
  cml::fill_bytes(out.data(), 0xFF, n * 4);
  k.fn(in.data(), out.data(), rows, cols, stream);
  CUDA_CHECK(cudaStreamSynchronize(stream));
  CUDA_CHECK(cudaMemcpy(host.data(), out.data(), n * 4, cudaMemcpyDeviceToHost));
  return ch05::check_transpose(host, rows, cols);
}

bool check(Context& c) {
  std::printf("\n== Every transpose on square, non-square and ragged shapes ==\n");
  bool ok = true;
  for (const auto& k : kernels()) {
    if (k.fn == ch05::copy_tiles) continue;
    const auto& shapes = k.wide ? ch05::checked_shapes_wide() : ch05::checked_shapes();
    bool kernel_ok = true;
    for (const auto& shape : shapes) {
      const auto r = run_and_check(k, shape.rows, shape.cols, c.stream);
      if (!r.ok)
        kernel_ok &= cml::report(r, std::string(k.name) + ", " + std::to_string(shape.rows) + " x " +
                                        std::to_string(shape.cols) + " (" + shape.what + ")");
    }
    if (kernel_ok) std::printf("%s: PASSED on %zu shapes\n", k.name, shapes.size());
    ok &= kernel_ok;
  }
  return ok;
}

bool time_transposes(Context& c) {
  const int rows = c.s.rows, cols = c.s.cols;
  const std::size_t n = static_cast<std::size_t>(rows) * cols, bytes = 2 * n * 4;
  std::printf("\n== %d x %d floats: GB/s = 10^9 bytes read + written per second ==\n", rows, cols);
  cml::DeviceBuffer<float> in(n), out(n);
  cml::fill_bytes(in.data(), 0, n * 4);
  std::vector<cml::Work> work = {[&](cudaStream_t st) {
    CUDA_CHECK(cudaMemcpyAsync(out.data(), in.data(), n * 4, cudaMemcpyDeviceToDevice, st));
  }};
  std::vector<std::string> names = {"cudaMemcpy device to device"};
  for (const auto& k : kernels()) {
    if (k.wide && (rows % 4 != 0 || cols % 4 != 0)) continue;
    work.push_back([&, fn = k.fn](cudaStream_t st) { fn(in.data(), out.data(), rows, cols, st); });
    names.emplace_back(k.name);
  }
  const auto st = cml::time_interleaved(work, c.stream, c.run.timing);
  cml::Table t("transpose", {"kernel", "ms", "GB/s", "of cudaMemcpy", "of copy_tiles"});
  for (std::size_t i = 0; i < work.size(); ++i)
    t.row({names[i], cml::with_noise(st[i]), fixed(cml::gbps(bytes, st[i].median_ms), 0),
           fixed(st[0].median_ms / st[i].median_ms, 3), fixed(st[1].median_ms / st[i].median_ms, 3)});
  c.run.emit(t);
  return true;
}

bool widths(Context& c) {
  std::printf("\n== Access-width experiments: one warp, one access, the bank model's prediction ==\n");
  cml::Table t("widths", {"experiment", "active lanes", "transactions", "wavefronts", "conflicts", "merged", "shows"});
  cml::DeviceBuffer<unsigned> element(32);
  cml::DeviceBuffer<float> sink(32);
  for (const auto& e : ch05::experiments()) {
    cml::upload(element.data(), e.element.data(), e.element.size());
    ch05::run_experiment(e.store, e.width, element.data(), e.active, sink.data(), c.stream);
    const auto m = e.model();
    t.row({e.name, std::to_string(__builtin_popcount(e.active)), std::to_string(m.transactions),
           std::to_string(m.wavefronts), std::to_string(m.conflicts), m.merged ? "yes" : "no", e.shows});
  }
  CUDA_CHECK(cudaStreamSynchronize(c.stream));
  c.run.emit(t);
  std::printf("(each ran once on the GPU; --mode=profile has Nsight Compute count them)\n");
  return true;
}

// Every experiment once, then every kernel once on the profile shape: what ncu profiles.
bool profile_target(Context& c) {
  if (c.s.eight_byte_banks) {
    // Deprecated in CUDA 13 and without effect since Maxwell: asked for, to be measured.
#pragma nv_diag_suppress 1444
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
    CUDA_CHECK(cudaDeviceSetSharedMemConfig(cudaSharedMemBankSizeEightByte));
#pragma GCC diagnostic pop
  }
  cml::DeviceBuffer<unsigned> element(32 * ch05::experiments().size());
  cml::DeviceBuffer<float> sink(32);
  for (std::size_t i = 0; i < ch05::experiments().size(); ++i) {
    const auto& e = ch05::experiments()[i];
    cml::upload(element.data() + 32 * i, e.element.data(), e.element.size());
    ch05::run_experiment(e.store, e.width, element.data() + 32 * i, e.active, sink.data(), c.stream);
  }
  const auto shape = ch05::kProfileShape;
  const std::size_t n = static_cast<std::size_t>(shape.rows) * shape.cols;
  cml::DeviceBuffer<float> in(n), out(n);
  CUDA_CHECK(cudaMemsetAsync(in.data(), 0, n * 4, c.stream));
  for (const auto& k : kernels()) k.fn(in.data(), out.data(), shape.rows, shape.cols, c.stream);
  CUDA_CHECK(cudaStreamSynchronize(c.stream));
  return true;
}

cml::ncu::Result profile_run(const Context& c, bool eight) {
  std::vector<std::string> cmd = {cml::sass::self_executable(), "--mode=profile-target",
                                  "--device=" + std::to_string(c.run.facts.index)};
  if (eight) cmd.emplace_back("--eight-byte-banks");
  return cml::ncu::profile(cmd, ch05::profiled_kernels(), ch05::transpose_metrics(), {"CML_TRACE=off"});
}

bool profile(Context& c) {
  std::printf("\n== The bank model against Nsight Compute (one warp per experiment) ==\n");
  const auto r = profile_run(c, false), r8 = profile_run(c, true);
  const auto& ex = ch05::experiments();
  if (!r.ok || r.kernels.size() != ex.size() + kernels().size()) {
    std::printf("(not measured: %s)\n", r.ok ? "ncu profiled another number of kernels" : r.error.c_str());
    return true;
  }
  const auto v = [](const cml::ncu::Result& res, std::size_t i, int m) {
    if (!res.ok || i >= res.kernels.size()) return -1.0;
    const auto& vals = res.kernels[i].values;
    const auto it = vals.find(ch05::transpose_metrics()[m]);
    return it == vals.end() ? -1.0 : it->second;
  };
  cml::Table t("model_vs_ncu", {"experiment", "op", "model wavefronts", "ncu wavefronts", "model conflicts",
                                "ncu conflicts", "ncu instructions", "ncu wavefronts, 8-byte banks asked", "agree"});
  std::size_t differ = 0;
  for (std::size_t i = 0; i < ex.size(); ++i) {
    const auto m = ex[i].model();
    const int base = ex[i].store ? ch05::kStWavefronts : ch05::kLdWavefronts;
    const bool agree = v(r, i, base) == m.wavefronts && v(r, i, base + 1) == m.conflicts;
    differ += agree ? 0 : 1;
    t.row({ex[i].name, ex[i].store ? "st" : "ld", std::to_string(m.wavefronts), fixed(v(r, i, base), 0),
           std::to_string(m.conflicts), fixed(v(r, i, base + 1), 0), fixed(v(r, i, base + 2), 0),
           fixed(v(r8, i, base), 0), agree ? "yes" : "NO"});
  }
  const auto shape = ch05::kProfileShape;
  for (std::size_t k = 0; k < kernels().size(); ++k) {
    const auto& kern = kernels()[k];
    const std::size_t i = ex.size() + k;
    // Steps 1-3: the tile's side and pitch read from the kernel's static shared memory
    // (the header's mapping of threads assumed); step 4: the solution's float4 layout.
    int side = 0, pitch = 0;
    const bool tile = kern.model == Kernel::kTileModel || kern.model == Kernel::kSwizzledTileModel;
    const bool modelled = kern.model == Kernel::kWideModel ||
                          (tile && ch05::tile_from_static_shared(v(r, i, ch05::kStaticShared), side, pitch));
    const auto m = !modelled ? ch05::TileModel{}
                   : tile    ? ch05::tile_transpose_model(shape.rows, shape.cols, side, pitch,
                                                          kern.model == Kernel::kSwizzledTileModel)
                             : ch05::wide_transpose_model(shape.rows, shape.cols);
    for (const bool st : {false, true}) {
      const int base = st ? ch05::kStWavefronts : ch05::kLdWavefronts;
      const auto& mm = st ? m.stores : m.loads;
      const double inst = v(r, i, base + 2);
      const bool agree = !modelled || (ch05::within_stray(v(r, i, base), mm.wavefronts, inst) &&
                                       ch05::within_stray(v(r, i, base + 1), mm.conflicts, inst));
      differ += agree ? 0 : 1;
      t.row({kern.name, st ? "st" : "ld", modelled ? std::to_string(mm.wavefronts) : "-", fixed(v(r, i, base), 0),
             modelled ? std::to_string(mm.conflicts) : "-", fixed(v(r, i, base + 1), 0), fixed(v(r, i, base + 2), 0),
             fixed(v(r8, i, base), 0), modelled ? (agree ? "yes" : "NO") : "-"});
    }
  }
  c.run.emit(t);
  std::printf(
      "(transposes on %d x %d; steps 1-3's model assumes shared_memory.cuh's mapping of threads to the tile, "
      "with the tile's side and pitch read from its static shared memory; step 4's is the solution's "
      "float4 layout. "
      "%zu row(s) where model and ncu differ: a rule of cml/banks.hpp to revisit)\n",
      shape.rows, shape.cols, differ);
  return true;
}

const std::vector<cml::Mode<Context>>& modes() {
  static const std::vector<cml::Mode<Context>> m = {
      {"check", "every transpose against the CPU on square, non-square and ragged shapes", check},
      {"transpose", "time the transposes against cudaMemcpy and copy_tiles at --rows x --cols", time_transposes},
      {"widths", "the access-width experiments with the bank model's prediction", widths},
      {"profile", "model against Nsight Compute's counters (needs ncu)", profile, false},
      {"profile-target", "each experiment and kernel once, for ncu", profile_target, false},
  };
  return m;
}

int run(int argc, char** argv) {
  Settings s;
  cml::Cli cli = cml::chapter_cli(
      "05",
      "Chapter 05 - shared memory: tiled transposes (conflicting, padded, swizzled, 16-byte) against a\n"
      "copy, and the bank model's wavefronts for 32/64/128-bit accesses, checked with Nsight Compute.",
      modes(), s.mode);
  cli.integer("rows", s.rows, 1, 1 << 20, "rows of the timed matrix")
      .integer("cols", s.cols, 1, 1 << 20, "columns of the timed matrix")
      .flag("eight-byte-banks", s.eight_byte_banks, "profile-target: ask for 8-byte banks first (deprecated)");
  if (!cli.parse(argc, argv)) return cml::kExitOk;
  const std::uint64_t bytes = 2ull * static_cast<std::uint64_t>(s.rows) * static_cast<std::uint64_t>(s.cols) * 4;
  Context c{s, cml::open_run(cli, cml::Footprint{bytes, "--rows x --cols (two matrices)"}, s.mode == "profile-target")};
  return cml::finish(cml::run_modes(modes(), s.mode, c));
}

}  // namespace

int main(int argc, char** argv) {
  return cml::run_program([&] { return run(argc, argv); });
}
