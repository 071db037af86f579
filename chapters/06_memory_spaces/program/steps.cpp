// Chapter 06 — the program's three step modes: each checks your kernels and the chapter's
// comparisons against the CPU on a ragged shape, then times them interleaved on the
// --rows x --cols, --pixels or --side problem, with what the compiler made of each.
// Every copy, memset and kernel of a mode runs in the order of its one stream (harness.hpp).
//
//   ./lab run 06 -- --mode=local       step 1, and register spills on a kernel of their own
//   ./lab run 06 -- --mode=constant    step 2: four ways to read the matrix
//   ./lab run 06 -- --mode=texture     step 3: the rotation by hand and through your texture
#include "checked_run.hpp"
#include "harness.hpp"
#include "memory_spaces.cuh"
#include "modes.hpp"

#include "cml/buffers.hpp"
#include "cml/errors.hpp"
#include "cml/table.hpp"
#include "cml/timing.hpp"

#include <algorithm>
#include <cstdio>
#include <functional>
#include <string>
#include <vector>

namespace ch06 {

namespace {

using cml::fixed;

// The sort's reference: every run of kSortRun rows of each column, ascending.
std::vector<float> sorted_runs(std::vector<float> m, int rows, int cols) {
  std::vector<float> run;
  for (int c = 0; c < cols; ++c)
    for (int r0 = 0; r0 < rows; r0 += kSortRun) {
      run.clear();
      for (int r = r0; r < std::min(rows, r0 + kSortRun); ++r) run.push_back(m[static_cast<std::size_t>(r) * cols + c]);
      std::sort(run.begin(), run.end());
      for (std::size_t k = 0; k < run.size(); ++k) m[static_cast<std::size_t>(r0 + k) * cols + c] = run[k];
    }
  return m;
}

// Register spills, apart from step 1: the same sort with all the registers it wants, and
// capped so that ptxas spills to local or to shared memory.
bool spills(Context& c, const float* in, float* out) {
  struct V {
    const char* name;
    SortBudget budget;
    const char* kernel;
  };
  const std::vector<V> vs = {
      {"sort, all in registers", SortBudget::kRegisters, "sort_registers_kernel"},
      {"capped at 32 registers (spills to local)", SortBudget::kLocalSpill, "sort_capped_kernel"},
      {"capped, enable_smem_spilling (spills to shared)", SortBudget::kSharedSpill, "sort_smem_spill_kernel"},
  };
  std::printf("\n== Register spills: %d values sorted per thread, %d x %d floats ==\n", kSortRun, c.s.rows, c.s.cols);
  bool ok = true;
  {  // correctness on a ragged shape: the last run of each column is short
    const int rows = 1000, cols = 1037;
    std::vector<float> host(static_cast<std::size_t>(rows) * cols);
    for (std::size_t i = 0; i < host.size(); ++i) host[i] = fir_input(i);
    const auto want = sorted_runs(host, rows, cols);
    cml::DeviceBuffer<float> small(host.size());
    upload(small.data(), host, c.stream);
    for (const auto& v : vs)
      ok &= run_and_check(
          c, std::string(v.name) + ", 1000 x 1037",
          [&](float* o, cudaStream_t s) { sort_runs(v.budget, small.data(), o, rows, cols, s); }, host.size(),
          exactly(want));
  }
  std::vector<cml::Work> work;
  for (const auto& v : vs)
    work.push_back([&, b = v.budget](cudaStream_t s) { sort_runs(b, in, out, c.s.rows, c.s.cols, s); });
  const auto st = cml::time_interleaved(work, c.stream, c.run.timing);
  const std::size_t n = static_cast<std::size_t>(c.s.rows) * c.s.cols;
  cml::Table t("spills", {"kernel", "ms", "GB/s", "vs registers", "cuobjdump -res-usage", "SASS"});
  for (std::size_t i = 0; i < vs.size(); ++i)
    t.row({vs[i].name, cml::with_noise(st[i]), fixed(cml::gbps(2 * n * 4, st[i].median_ms), 0),
           fixed(st[0].median_ms / st[i].median_ms, 2), compiler_cell(vs[i].kernel),
           sass_cell(vs[i].kernel, {"LDL", "STL", "LDS", "STS"})});
  c.run.emit(t);
  return ok;
}

}  // namespace

// ---- Step 1 --------------------------------------------------------------------------------

bool local_mode(Context& c) {
  using FirFn = void (*)(const float*, float*, int, int, const Taps&, cudaStream_t);
  struct V {
    const char* name;
    FirFn fn;
    const void* kernel;  // for cudaFuncGetAttributes; provided.cu's kernels are not declared
    const char* kernel_name;
  };
  const std::vector<V> vs = {
      {"ring buffer, run-time index (local memory)", fir_ring, nullptr, "fir_ring_kernel"},
      {"fir_registers (yours, step 1)", fir_registers, reinterpret_cast<const void*>(fir_registers_kernel),
       "fir_registers_kernel"},
  };
  std::printf("\n== Step 1: a %d-tap column filter, %d x %d floats ==\n", kTaps, c.s.rows, c.s.cols);
  const auto taps = fir_taps();
  bool ok = true;
  {  // correctness on a ragged shape
    const int rows = 1000, cols = 1037;
    std::vector<float> host(static_cast<std::size_t>(rows) * cols);
    for (std::size_t i = 0; i < host.size(); ++i) host[i] = fir_input(i);
    const auto want = fir_reference(host, rows, cols, taps);
    cml::DeviceBuffer<float> in(host.size());
    upload(in.data(), host, c.stream);
    for (const auto& v : vs)
      ok &= run_and_check(
          c, std::string(v.name) + ", 1000 x 1037",
          [&](float* o, cudaStream_t s) { v.fn(in.data(), o, rows, cols, taps, s); }, host.size(), exactly(want));
  }
  const std::size_t n = static_cast<std::size_t>(c.s.rows) * c.s.cols;
  cml::DeviceBuffer<float> in(n), out(n);
  CUDA_CHECK(cudaMemsetAsync(in.data(), 0, n * 4, c.stream));
  std::vector<cml::Work> work;
  for (const auto& v : vs)
    work.push_back([&, fn = v.fn](cudaStream_t st) { fn(in.data(), out.data(), c.s.rows, c.s.cols, taps, st); });
  const auto st = cml::time_interleaved(work, c.stream, c.run.timing);
  cml::Table t("local", {"kernel", "ms", "GB/s", "vs ring", "numRegs", "localSizeBytes", "sharedSizeBytes",
                         "cuobjdump -res-usage", "SASS"});
  for (std::size_t i = 0; i < vs.size(); ++i) {
    std::vector<std::string> r = {vs[i].name, cml::with_noise(st[i]), fixed(cml::gbps(2 * n * 4, st[i].median_ms), 0),
                                  fixed(st[0].median_ms / st[i].median_ms, 2)};
    const auto runtime = vs[i].kernel ? runtime_cells(vs[i].kernel) : std::vector<std::string>{"-", "-", "-"};
    r.insert(r.end(), runtime.begin(), runtime.end());
    r.push_back(compiler_cell(vs[i].kernel_name));
    r.push_back(vs[i].kernel
                    ? sass_cell(vs[i].kernel_name, {"LDL", "STL", "LDS", "c[0x3][imm]", "c[0x3][R]", "LDG", "TEX"})
                    : sass_cell(vs[i].kernel_name, {"LDL", "STL", "LDS", "STS"}));
    t.row(r);
  }
  c.run.emit(t);
  std::printf(
      "(GB/s = 10^9 bytes read + written per second; ptxas's own words: nvcc -Xptxas -v; "
      "./lab check 06 checks your kernel's compiled code, without a GPU too)\n");
  return spills(c, in.data(), out.data()) && ok;
}

// ---- Step 2 --------------------------------------------------------------------------------

bool constant_mode(Context& c) {
  const int n = c.s.pixels;
  std::printf("\n== Step 2: a %d x %d channel mix over %d pixels ==\n", kChannels, kChannels, n);
  const auto m = mix_matrix();
  set_mix(m.data());
  set_mix_divergent(m.data());
  const std::size_t total = static_cast<std::size_t>(n) * kChannels;
  std::vector<float> host(total);
  for (std::size_t i = 0; i < total; ++i) host[i] = mix_input(i);
  cml::DeviceBuffer<float> in(total), out(total), matrix(m.size());
  upload(in.data(), host, c.stream);
  upload(matrix.data(), m, c.stream);
  const auto want = mix_reference(host, m, n);
  struct V {
    const char* name;
    const char* kernel;
    std::function<void(float*, cudaStream_t)> work;
  };
  const std::vector<V> vs = {
      {"constant, lanes along rows of M (divergent)", "mix_divergent_kernel",
       [&](float* o, cudaStream_t s) { mix_divergent(in.data(), o, n, s); }},
      {"mix_constant (yours, step 2)", "mix_constant_kernel",
       [&](float* o, cudaStream_t s) { mix_constant(in.data(), o, n, s); }},
      {"global, plain loads, lanes along rows", "mix_global_kernel",
       [&](float* o, cudaStream_t s) { mix_global(in.data(), matrix.data(), o, n, s); }},
      {"global, __ldg (read-only path), lanes along rows", "mix_ldg_kernel",
       [&](float* o, cudaStream_t s) { mix_ldg(in.data(), matrix.data(), o, n, s); }},
  };
  bool ok = true;
  for (const auto& v : vs) ok &= run_and_check(c, v.name, v.work, total, exactly(want));
  std::vector<cml::Work> work;
  for (const auto& v : vs) work.push_back([&, w = v.work](cudaStream_t s) { w(out.data(), s); });
  const auto st = cml::time_interleaved(work, c.stream, c.run.timing);
  cml::Table t("constant", {"kernel", "ms", "GB/s", "vs divergent", "SASS: reads of M"});
  for (std::size_t i = 0; i < vs.size(); ++i)
    t.row({vs[i].name, cml::with_noise(st[i]), fixed(cml::gbps(2 * total * 4, st[i].median_ms), 0),
           fixed(st[0].median_ms / st[i].median_ms, 2),
           sass_cell(vs[i].kernel, {"c[0x3][imm]", "c[0x3][R]", "LDG.E.CONSTANT", "other LDG"})});
  c.run.emit(t);
  return ok;
}

// ---- Step 3 --------------------------------------------------------------------------------

bool texture_mode(Context& c) {
  const int w = c.s.side, h = c.s.side;
  const float angle = static_cast<float>(c.s.degrees) * 3.14159265f / 180.0f;
  std::printf("\n== Step 3: rotating a %d x %d image by %d degrees ==\n", w, h, c.s.degrees);
  const PitchedImage image(w, h, c.stream);
  const Image img = image.image();
  const TextureObject tex(create_rotation_texture(img));
  cml::DeviceBuffer<float> out(image.host.size());
  const auto ref = rotation_reference(image.host, w, h, angle);
  const std::vector<std::pair<const char*, std::function<void(float*, cudaStream_t)>>> vs = {
      {"plain loads, hand-written bilinear + bounds checks",
       [&](float* o, cudaStream_t s) { rotate_manual(img, angle, o, s); }},
      {"rotate_texture (yours, step 3)", [&](float* o, cudaStream_t s) { rotate_texture(tex.t, img, angle, o, s); }},
  };
  bool ok = true;
  for (const auto& [name, work] : vs)
    ok &= run_and_check(
        c, name, work, image.host.size(), [&](const std::vector<float>& got) { return rotation_mismatch(got, ref, w); },
        "PASSED (within the 9-bit weights' tolerance)");
  if (tex.t == 0) std::printf("(create_rotation_texture returned no texture yet: step 3)\n");
  const auto st = cml::time_interleaved(
      {[&](cudaStream_t s) { vs[0].second(out.data(), s); }, [&](cudaStream_t s) { vs[1].second(out.data(), s); }},
      c.stream, c.run.timing);
  cml::Table t("texture", {"kernel", "ms", "vs plain loads"});
  for (std::size_t i = 0; i < vs.size(); ++i)
    t.row({vs[i].first, cml::with_noise(st[i]), fixed(st[0].median_ms / st[i].median_ms, 2)});
  c.run.emit(t);
  return ok;
}

}  // namespace ch06
