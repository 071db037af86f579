// Chapter 06 — the other memory spaces (CUDA C++ Best Practices Guide §9.2: the table of
// spaces, local memory §9.2.3, texture §9.2.4, constant §9.2.5). Prints this GPU's memory
// spaces, then checks and times your three kernels beside the chapter's comparisons, with
// what the compiler made of each (registers, stack frame, LDL/STL, constant reads, TEX).
//
//   ./lab run 06                          the table, check, time, with resources and SASS
//   ./lab run 06 -- --mode=mechanism      the compiled code's checks only (no GPU needed)
//   ./lab run 06 -- --degrees=30          the rotation's angle
#include "harness.hpp"
#include "memory_spaces.cuh"

#include "cml/buffers.hpp"
#include "cml/errors.hpp"
#include "cml/exit_codes.hpp"
#include "cml/program.hpp"
#include "cml/run.hpp"
#include "cml/sass.hpp"
#include "cml/stream.hpp"
#include "cml/table.hpp"
#include "cml/timing.hpp"
#include "cml/verify.hpp"

#include <algorithm>
#include <cstdio>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace {

using cml::fixed;

struct Settings {
  std::string mode = "all";
  int rows = 8192, cols = 8192;  // the filter's matrix
  int pixels = 1 << 24;          // the mix's pixels
  int side = 4096;               // the rotated image's side
  int degrees = 30;
};

struct Context {
  const Settings& s;
  cml::Run run;
  cml::Stream stream{cudaStreamNonBlocking};
};

std::string kib(std::size_t bytes) { return std::to_string(bytes / 1024) + " KiB"; }

// ---- The table of spaces -------------------------------------------------------------------

bool table(Context& c) {
  cudaDeviceProp p{};
  CUDA_CHECK(cudaGetDeviceProperties(&p, c.run.facts.index));
  std::printf("\n== Memory spaces on %s (sizes: this device's properties; [arch] = architecture constant, not "
              "reported by the device) ==\n", p.name);
  cml::Table t("memory_spaces", {"space", "where", "cached", "access", "scope", "lifetime", "size here"});
  t.row({"register", "on chip (SM register file)", "n/a", "R/W", "1 thread", "thread",
         std::to_string(p.regsPerMultiprocessor) + " x 32-bit per SM, " + std::to_string(p.regsPerBlock) +
             " per block; 255 per thread [arch]"});
  t.row({"local", "device memory", "L1 and L2", "R/W", "1 thread", "thread",
         "up to 512 KiB per thread [arch]; L1 cache for local: " + std::string(p.localL1CacheSupported ? "yes" : "no")});
  t.row({"shared", "on chip (with L1)", "n/a", "R/W", "all threads in block", "block",
         kib(p.sharedMemPerBlock) + " per block (" + kib(p.sharedMemPerBlockOptin) + " opt-in), " +
             kib(p.sharedMemPerMultiprocessor) + " per SM; L1 + shared 256 KiB per SM on sm_90 [arch]"});
  t.row({"global", "device memory", "L2 (and L1 for loads)", "R/W", "all threads + host", "host allocation",
         kib(p.totalGlobalMem / 1024) + "i (MiB), L2 " + kib(p.l2CacheSize)});
  t.row({"constant", "device memory", "constant cache", "R", "all threads + host", "host allocation",
         kib(p.totalConstMem) + " (one address per warp per cycle: broadcast)"});
  t.row({"texture", "device memory", "L1/texture cache", "R", "all threads + host", "host allocation",
         "2D up to " + std::to_string(p.maxTexture2D[0]) + " x " + std::to_string(p.maxTexture2D[1]) +
             " texels; pitch alignment " + std::to_string(p.texturePitchAlignment) + " bytes"});
  c.run.emit(t);
  return true;
}

// ---- The compiled code of this program, for the resource columns ----------------------------

const std::map<std::string, ch06::KernelCode>* own_code(std::string& why) {
  static std::map<std::string, ch06::KernelCode> code;
  static std::string error;
  static bool done = false;
  if (!done) {
    done = true;
    try {
      code = ch06::read_code(cml::sass::self_executable());
    } catch (const cml::Skip& e) {
      error = e.what();
    }
  }
  why = error;
  return error.empty() ? &code : nullptr;
}

// cudaFuncGetAttributes (what the runtime loaded) beside cuobjdump's report (what ptxas wrote).
std::vector<std::string> resources(const void* kernel, const std::string& name) {
  cudaFuncAttributes a{};
  CUDA_CHECK(cudaFuncGetAttributes(&a, kernel));
  std::string why, compiler = "-", sass = "-";
  if (const auto* code = own_code(why)) {
    if (const auto* k = ch06::find_kernel(*code, name)) {
      compiler = "REG " + std::to_string(k->res.regs) + ", STACK " + std::to_string(k->res.stack) + ", SHARED " +
                 std::to_string(k->res.shared);
      sass = std::to_string(k->count_opcode("LDL")) + " LDL, " + std::to_string(k->count_opcode("STL")) + " STL, " +
             std::to_string(k->count_opcode("LDS")) + " LDS, " + std::to_string(k->constant_uniform()) + " c[0x3][imm], " +
             std::to_string(k->constant_divergent()) + " c[0x3][R], " + std::to_string(k->count_opcode("LDG")) + " LDG, " +
             std::to_string(k->texture_fetches()) + " TEX";
    }
  }
  return {std::to_string(a.numRegs), std::to_string(a.localSizeBytes), std::to_string(a.sharedSizeBytes), compiler, sass};
}

// ---- Step 1 ----------------------------------------------------------------------------------

using FirFn = void (*)(const float*, float*, int, int, const ch06::Taps&, cudaStream_t);

bool local(Context& c) {
  struct V {
    const char* name;
    FirFn fn;
    const void* kernel;
    const char* kernel_name;
  };
  const std::vector<V> vs = {
      {"ring buffer, run-time index (local memory)", ch06::fir_ring, nullptr, "fir_ring_kernel"},
      {"fir_registers (yours, step 1)", ch06::fir_registers, reinterpret_cast<const void*>(ch06::fir_registers_kernel),
       "fir_registers_kernel"},
      {"register-resident, capped at 32 registers (spills)", ch06::fir_capped, nullptr, "fir_capped_kernel"},
      {"capped, enable_smem_spilling (spills to shared)", ch06::fir_smem_spill, nullptr, "fir_smem_spill_kernel"},
  };
  std::printf("\n== Step 1: a %d-tap column filter, %d x %d floats ==\n", ch06::kTaps, c.s.rows, c.s.cols);
  const auto taps = ch06::fir_taps();
  bool ok = true;
  {  // correctness on a ragged shape
    const int rows = 1000, cols = 1037;
    const std::size_t n = static_cast<std::size_t>(rows) * cols;
    std::vector<float> host(n);
    for (std::size_t i = 0; i < n; ++i) host[i] = ch06::fir_input(i);
    const auto want = ch06::fir_reference(host, rows, cols, taps);
    cml::DeviceBuffer<float> in(n), out(n);
    CUDA_CHECK(cudaMemcpy(in.data(), host.data(), n * 4, cudaMemcpyHostToDevice));
    for (const auto& v : vs) {
      CUDA_CHECK(cudaMemset(out.data(), 0xFF, n * 4));
      v.fn(in.data(), out.data(), rows, cols, taps, c.stream);
      CUDA_CHECK(cudaStreamSynchronize(c.stream));
      std::vector<float> got(n);
      CUDA_CHECK(cudaMemcpy(got.data(), out.data(), n * 4, cudaMemcpyDeviceToHost));
      ok &= cml::report(cml::compare_exact(got.data(), want.data(), n), std::string(v.name) + ", 1000 x 1037");
    }
  }
  const std::size_t n = static_cast<std::size_t>(c.s.rows) * c.s.cols;
  cml::DeviceBuffer<float> in(n), out(n);
  CUDA_CHECK(cudaMemset(in.data(), 0, n * 4));
  std::vector<cml::Work> work;
  for (const auto& v : vs)
    work.push_back([&, fn = v.fn](cudaStream_t st) { fn(in.data(), out.data(), c.s.rows, c.s.cols, taps, st); });
  const auto st = cml::time_interleaved(work, c.stream, c.run.timing);
  // The provided kernels' handles come from support.cu; look them up by launching name.
  const void* handles[] = {nullptr, vs[1].kernel, nullptr, nullptr};
  cml::Table t("local", {"kernel", "ms", "GB/s", "vs ring", "numRegs", "localSizeBytes", "sharedSizeBytes",
                         "cuobjdump -res-usage", "SASS"});
  for (std::size_t i = 0; i < vs.size(); ++i) {
    std::vector<std::string> r = {vs[i].name, cml::with_noise(st[i]), fixed(cml::gbps(2 * n * 4, st[i].median_ms), 0),
                                  fixed(st[0].median_ms / st[i].median_ms, 2)};
    const auto res = handles[i] ? resources(handles[i], vs[i].kernel_name)
                                : std::vector<std::string>{"-", "-", "-", "-", "-"};
    std::vector<std::string> res2 = res;
    if (!handles[i]) {  // provided kernels: the compiler's report only
      std::string why;
      if (const auto* code = own_code(why))
        if (const auto* k = ch06::find_kernel(*code, vs[i].kernel_name)) {
          res2[3] = "REG " + std::to_string(k->res.regs) + ", STACK " + std::to_string(k->res.stack) + ", SHARED " +
                    std::to_string(k->res.shared);
          res2[4] = std::to_string(k->count_opcode("LDL")) + " LDL, " + std::to_string(k->count_opcode("STL")) +
                    " STL, " + std::to_string(k->count_opcode("LDS")) + " LDS, " + std::to_string(k->count_opcode("STS")) +
                    " STS";
        }
    }
    r.insert(r.end(), res2.begin(), res2.end());
    t.row(r);
  }
  c.run.emit(t);
  std::printf("(GB/s = 10^9 bytes read + written per second; ptxas's own words: nvcc -Xptxas -v, or "
              "./lab run 06 -- --mode=mechanism)\n");
  return ok;
}

// ---- Step 2 ----------------------------------------------------------------------------------

bool constant(Context& c) {
  const int n = c.s.pixels;
  std::printf("\n== Step 2: a %d x %d channel mix over %d pixels ==\n", ch06::kChannels, ch06::kChannels, n);
  const auto m = ch06::mix_matrix();
  ch06::set_mix(m.data());
  ch06::set_mix_divergent(m.data());
  const std::size_t total = static_cast<std::size_t>(n) * ch06::kChannels;
  std::vector<float> host(total);
  for (std::size_t i = 0; i < total; ++i) host[i] = ch06::mix_input(i);
  cml::DeviceBuffer<float> in(total), out(total), matrix(m.size());
  CUDA_CHECK(cudaMemcpy(in.data(), host.data(), total * 4, cudaMemcpyHostToDevice));
  CUDA_CHECK(cudaMemcpy(matrix.data(), m.data(), m.size() * 4, cudaMemcpyHostToDevice));
  const auto want = ch06::mix_reference(host, m, n);
  struct V {
    const char* name;
    const char* kernel;
    cml::Work work;
  };
  const std::vector<V> vs = {
      {"constant, lanes along rows of M (divergent)", "mix_divergent_kernel",
       [&](cudaStream_t s) { ch06::mix_divergent(in.data(), out.data(), n, s); }},
      {"mix_constant (yours, step 2)", "mix_constant_kernel",
       [&](cudaStream_t s) { ch06::mix_constant(in.data(), out.data(), n, s); }},
      {"global, plain loads, lanes along rows", "mix_global_kernel",
       [&](cudaStream_t s) { ch06::mix_global(in.data(), matrix.data(), out.data(), n, s); }},
      {"global, __ldg (read-only path), lanes along rows", "mix_ldg_kernel",
       [&](cudaStream_t s) { ch06::mix_ldg(in.data(), matrix.data(), out.data(), n, s); }},
  };
  bool ok = true;
  std::vector<float> got(total);
  for (const auto& v : vs) {
    CUDA_CHECK(cudaMemset(out.data(), 0xFF, total * 4));
    v.work(c.stream);
    CUDA_CHECK(cudaStreamSynchronize(c.stream));
    CUDA_CHECK(cudaMemcpy(got.data(), out.data(), total * 4, cudaMemcpyDeviceToHost));
    ok &= cml::report(cml::compare_exact(got.data(), want.data(), total), v.name);
  }
  std::vector<cml::Work> work;
  for (const auto& v : vs) work.push_back(v.work);
  const auto st = cml::time_interleaved(work, c.stream, c.run.timing);
  cml::Table t("constant", {"kernel", "ms", "GB/s", "vs divergent", "SASS: reads of M"});
  std::string why;
  const auto* code = own_code(why);
  for (std::size_t i = 0; i < vs.size(); ++i) {
    std::string sass = why.empty() ? "-" : "(" + why.substr(0, 40) + ")";
    if (code)
      if (const auto* k = ch06::find_kernel(*code, vs[i].kernel))
        sass = std::to_string(k->constant_uniform()) + " c[0x3][imm], " + std::to_string(k->constant_divergent()) +
               " c[0x3][R], " + std::to_string(k->count_opcode("LDG.E.CONSTANT")) + " LDG.E.CONSTANT, " +
               std::to_string(k->count_opcode("LDG") - k->count_opcode("LDG.E.CONSTANT")) + " other LDG";
    t.row({vs[i].name, cml::with_noise(st[i]), fixed(cml::gbps(2 * total * 4, st[i].median_ms), 0),
           fixed(st[0].median_ms / st[i].median_ms, 2), sass});
  }
  c.run.emit(t);
  return ok;
}

// ---- Step 3 ----------------------------------------------------------------------------------

struct TextureGuard {
  cudaTextureObject_t t = 0;
  ~TextureGuard() {
    if (t != 0) cudaDestroyTextureObject(t);
  }
};

bool texture(Context& c) {
  const int w = c.s.side, h = c.s.side;
  const float angle = static_cast<float>(c.s.degrees) * 3.14159265f / 180.0f;
  std::printf("\n== Step 3: rotating a %d x %d image by %d degrees ==\n", w, h, c.s.degrees);
  std::vector<float> host(static_cast<std::size_t>(w) * h);
  for (int y = 0; y < h; ++y)
    for (int x = 0; x < w; ++x) host[static_cast<std::size_t>(y) * w + x] = ch06::image_value(x, y);
  float* pitched = nullptr;
  std::size_t pitch = 0;
  CUDA_CHECK(cudaMallocPitch(reinterpret_cast<void**>(&pitched), &pitch, w * sizeof(float), h));
  std::unique_ptr<float, void (*)(float*)> own(pitched, [](float* p) { cudaFree(p); });
  CUDA_CHECK(cudaMemcpy2D(pitched, pitch, host.data(), w * sizeof(float), w * sizeof(float), h, cudaMemcpyHostToDevice));
  const ch06::Image img{pitched, pitch, w, h};
  TextureGuard tex{ch06::create_rotation_texture(img)};
  cml::DeviceBuffer<float> out(host.size());
  const auto ref = ch06::rotation_reference(host, w, h, angle);
  bool ok = true;
  std::vector<float> got(host.size());
  const std::vector<std::pair<const char*, cml::Work>> vs = {
      {"plain loads, hand-written bilinear + bounds checks",
       [&](cudaStream_t s) { ch06::rotate_manual(img, angle, out.data(), s); }},
      {"rotate_texture (yours, step 3)", [&](cudaStream_t s) { ch06::rotate_texture(tex.t, img, angle, out.data(), s); }},
  };
  for (const auto& [name, work] : vs) {
    CUDA_CHECK(cudaMemset(out.data(), 0xFF, host.size() * 4));
    work(c.stream);
    CUDA_CHECK(cudaStreamSynchronize(c.stream));
    CUDA_CHECK(cudaMemcpy(got.data(), out.data(), got.size() * 4, cudaMemcpyDeviceToHost));
    const std::string miss = ch06::rotation_mismatch(got, ref, w);
    std::printf("%s: %s\n", name, miss.empty() ? "PASSED (within the 9-bit weights' tolerance)" : ("FAILED: " + miss).c_str());
    ok &= miss.empty();
  }
  if (tex.t == 0) std::printf("(create_rotation_texture returned no texture yet: step 3)\n");
  const auto st = cml::time_interleaved({vs[0].second, vs[1].second}, c.stream, c.run.timing);
  cml::Table t("texture", {"kernel", "ms", "vs plain loads"});
  for (std::size_t i = 0; i < vs.size(); ++i)
    t.row({vs[i].first, cml::with_noise(st[i]), fixed(st[0].median_ms / st[i].median_ms, 2)});
  c.run.emit(t);
  return ok;
}

// ---- The compiled code's checks (no GPU) --------------------------------------------------------

int mechanism_only() {
  const auto code = ch06::read_code(cml::sass::self_executable());
  const std::string errors[] = {ch06::step1_code_error(ch06::find_kernel(code, "fir_registers_kernel")),
                                ch06::step2_code_error(ch06::find_kernel(code, "mix_constant_kernel")),
                                ch06::step3_code_error(ch06::find_kernel(code, "rotate_texture_kernel"))};
  const char* kernels[] = {"fir_registers_kernel", "mix_constant_kernel", "rotate_texture_kernel"};
  bool ok = true;
  for (int i = 0; i < 3; ++i) {
    const auto* k = ch06::find_kernel(code, kernels[i]);
    if (k)
      std::printf("%s: REG %d, STACK %d, SHARED %d, LOCAL %d; %zu LDL, %zu STL, %zu c[0x3][imm], %zu c[0x3][R], "
                  "%zu LDG, %zu TEX/TLD\n",
                  kernels[i], k->res.regs, k->res.stack, k->res.shared, k->res.local, k->count_opcode("LDL"),
                  k->count_opcode("STL"), k->constant_uniform(), k->constant_divergent(), k->global_loads(),
                  k->texture_fetches());
    std::printf("step %d: %s\n", i + 1, errors[i].empty() ? "PASSED" : ("FAILED: " + errors[i]).c_str());
    ok &= errors[i].empty();
  }
  return ok ? cml::kExitOk : cml::kExitWrong;
}

bool mechanism(Context&) { return mechanism_only() == cml::kExitOk; }

const std::vector<cml::Mode<Context>>& modes() {
  static const std::vector<cml::Mode<Context>> m = {
      {"table", "the memory spaces with this GPU's sizes", table},
      {"local", "step 1: the filter in local memory, in registers, and capped into spills", local},
      {"constant", "step 2: the mix from constant memory (divergent, yours), global and __ldg", constant},
      {"texture", "step 3: the rotation by hand and through your texture", texture},
      {"mechanism", "the compiled code's checks of steps 1-3 (no GPU needed)", mechanism, false},
  };
  return m;
}

int run(int argc, char** argv) {
  Settings s;
  cml::Cli cli = cml::chapter_cli("06",
                                  "Chapter 06 - the other memory spaces: registers vs local memory and spills, constant "
                                  "memory\nbroadcast vs divergent vs the read-only path, and a rotation through the "
                                  "texture unit.",
                                  modes(), s.mode);
  cli.integer("rows", s.rows, 1, 1 << 16, "step 1: rows of the filtered matrix")
      .integer("cols", s.cols, 1, 1 << 16, "step 1: columns of the filtered matrix")
      .integer("pixels", s.pixels, 1, 1 << 26, "step 2: pixels of 16 channels")
      .integer("side", s.side, 1, 1 << 14, "step 3: side of the rotated image")
      .integer("degrees", s.degrees, -360, 360, "step 3: the rotation's angle");
  if (!cli.parse(argc, argv)) return cml::kExitOk;
  if (s.mode == "mechanism") return mechanism_only();
  const std::uint64_t fir = 2ull * s.rows * s.cols * 4, mix = 2ull * s.pixels * ch06::kChannels * 4,
                      img = 2ull * s.side * s.side * 4 + 65536ull * s.side;
  const std::uint64_t bytes = std::max({fir, mix, img});
  Context c{s, cml::open_run(cli, cml::Footprint{bytes, "--rows x --cols, --pixels or --side (the largest)"})};
  return cml::finish(cml::run_modes(modes(), s.mode, c));
}

}  // namespace

int main(int argc, char** argv) {
  return cml::run_program([&] { return run(argc, argv); });
}
