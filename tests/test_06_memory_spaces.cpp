// Chapter 06 — the other memory spaces: the tests of exercise.cu, step by step. Results
// against the CPU (the filter and the mix exactly, the rotation within the tolerance the
// texture unit's 9-bit weights allow); the header's promises (only enqueues, on the stream
// given; nothing for an empty input); mechanism from the compiled code of the learner's own
// kernels (cuobjdump: resources and SASS) and from the runtime (cudaFuncGetAttributes, the
// texture object's descriptor); speed relative to the chapter's slow version of each step,
// timed interleaved in the same process.
//
//   ./lab check 06                        against your exercise.cu
//   meson test -C build "ch06 solution"   against the solution
#include "harness.hpp"
#include "memory_spaces.cuh"
#include "enqueue_only.hpp"
#include "gpu.hpp"

#include "cml/buffers.hpp"
#include "cml/errors.hpp"
#include "cml/sass.hpp"
#include "cml/stream.hpp"
#include "cml/timing.hpp"
#include "cml/verify.hpp"

#include <cmath>
#include <cstring>
#include <map>
#include <memory>
#include <tuple>
#include <string>
#include <vector>

namespace {

// The speed bars. PROVISIONAL: not yet measured; the lead runs both sides five times on
// the GPU (docs/06_memory_spaces.md, "Speed bars") and moves each into the middle of the
// gap between the slowest correct solution and the fastest mistake the step teaches.
//   step 1: the ring buffer in local memory (the starter) against the register window.
constexpr double kRegistersOverRing = 1.3;
//   step 2: the divergent constant reads (the starter's mapping) against one address per warp.
constexpr double kConstantOverDivergent = 1.5;

const std::map<std::string, ch06::KernelCode>& own_code() {
  static const auto code = ch06::read_code(cml::sass::self_executable());
  return code;
}

#define CML_CODE(var, name)                                        \
  const ch06::KernelCode* var = nullptr;                           \
  try {                                                            \
    var = ch06::find_kernel(own_code(), name);                     \
  } catch (const cml::Skip& e) {                                   \
    CML_SKIP(e.what());                                            \
  }

// ---- Step 1 helpers ---------------------------------------------------------------------

using FirFn = void (*)(const float*, float*, int, int, const ch06::Taps&, cudaStream_t);
constexpr std::size_t kGuard = 64;

std::string fir_error(FirFn fn, int rows, int cols, int seed) {
  const std::size_t n = static_cast<std::size_t>(rows) * cols;
  std::vector<float> host(n + kGuard);
  for (std::size_t i = 0; i < n; ++i) host[i] = ch06::fir_input(i + seed);
  const auto taps = ch06::fir_taps(seed);
  host.resize(n);
  const auto want = ch06::fir_reference(host, rows, cols, taps);
  host.resize(n + kGuard);
  cml::DeviceBuffer<float> in(n + kGuard), out(n + kGuard);
  CUDA_CHECK(cudaMemcpy(in.data(), host.data(), (n + kGuard) * 4, cudaMemcpyHostToDevice));
  CUDA_CHECK(cudaMemset(out.data(), 0xFF, (n + kGuard) * 4));
  cml::Stream s;
  fn(in.data(), out.data(), rows, cols, taps, s);
  s.synchronize();
  CUDA_CHECK(cudaMemcpy(host.data(), out.data(), (n + kGuard) * 4, cudaMemcpyDeviceToHost));
  for (std::size_t i = n; i < n + kGuard; ++i) {
    std::uint32_t bits = 0;
    std::memcpy(&bits, &host[i], 4);
    if (bits != 0xFFFFFFFFu) return "wrote past the end of out";
  }
  const auto v = cml::compare_exact(host.data(), want.data(), n);
  if (v.ok) return "";
  return v.describe() + " (row " + std::to_string(v.first_bad / cols) + ", column " + std::to_string(v.first_bad % cols) +
         (v.first_bad / cols < ch06::kTaps ? "; near the top: rows above 0 count as 0" : "") +
         (v.first_bad / cols % ch06::kSegment < ch06::kTaps ? "; at the start of a segment: the window must be filled "
                                                              "from the kTaps - 1 rows above the segment"
                                                            : "") +
         ")";
}

}  // namespace

// ---- Step 1 -----------------------------------------------------------------------------

TEST_CASE("step 1: fir_registers filters every shape exactly", "[ch06][step1][correctness]") {
  cml::test::device();
  int seed = 0;
  for (const auto& sh : ch06::fir_shapes()) {
    const std::string err = fir_error(ch06::fir_registers, sh.rows, sh.cols, seed++);
    INFO(sh.rows << " x " << sh.cols << " (" << sh.what << "): " << err << " (step 1; ./lab hint 06)");
    CHECK(err.empty());
  }
  for (const auto& [rows, cols, kernels] : {std::tuple<int, int, std::size_t>{64, 96, 1}, {0, 96, 0}, {64, 0, 0}}) {
    cml::DeviceBuffer<float> in(64 * 96), out(64 * 96);
    const auto taps = ch06::fir_taps();
    const std::string err = cml::test::enqueue_only_error(
        [&](cudaStream_t s) { ch06::fir_registers(in.data(), out.data(), rows, cols, taps, s); }, kernels);
    INFO("fir_registers on " << rows << " x " << cols << ": " << err
                             << " (memory_spaces.cuh: it only enqueues its kernel on `stream`; an empty matrix enqueues nothing)");
    CHECK(err.empty());
  }
}

TEST_CASE("step 1: fir_registers_kernel keeps its window in registers (resources, SASS)", "[ch06][step1][mechanism]") {
  CML_CODE(k, "fir_registers_kernel");
  const std::string err = ch06::step1_code_error(k);
  INFO(err << "(./lab run 06 -- --mode=mechanism shows it; ./lab hint 06)");
  CHECK(err.empty());
  // The runtime's view of the same kernel: what a program can ask for at run time.
  cml::test::device();
  cudaFuncAttributes a{};
  CUDA_CHECK(cudaFuncGetAttributes(&a, reinterpret_cast<const void*>(ch06::fir_registers_kernel)));
  INFO("cudaFuncGetAttributes(fir_registers_kernel): localSizeBytes = " << a.localSizeBytes << ", numRegs = " << a.numRegs
       << ": want no local memory (step 1)");
  CHECK(a.localSizeBytes == 0);
}

TEST_CASE("step 1: fir_registers is kRegistersOverRing x faster than the ring buffer (PROVISIONAL)", "[ch06][step1][perf]") {
  cml::test::device();
  const int rows = 8192, cols = 8192;
  const std::size_t n = static_cast<std::size_t>(rows) * cols;
  cml::DeviceBuffer<float> in(n), out(n);
  CUDA_CHECK(cudaMemset(in.data(), 0, n * 4));
  const auto taps = ch06::fir_taps();
  cml::Stream s;
  const auto st = cml::time_interleaved(
      {[&](cudaStream_t x) { ch06::fir_ring(in.data(), out.data(), rows, cols, taps, x); },
       [&](cudaStream_t x) { ch06::fir_registers(in.data(), out.data(), rows, cols, taps, x); }},
      s, {2, 10});
  INFO("fir_registers on 8192 x 8192: " << cml::ratio_text(st[0], st[1]) << " x the ring buffer's speed; want "
       << kRegistersOverRing << ": a window in local memory costs a load per tap per row (step 1; ./lab hint 06)");
  CHECK(st[0].median_ms / st[1].median_ms >= kRegistersOverRing);
}

// ---- Step 2 -----------------------------------------------------------------------------

TEST_CASE("step 2: mix_constant mixes every size exactly, with the matrix set_mix gave", "[ch06][step2][correctness]") {
  cml::test::device();
  for (const int seed : {0, 3}) {
    const auto m = ch06::mix_matrix(seed);
    ch06::set_mix(m.data());
    for (const int n : ch06::mix_sizes()) {
      const std::size_t total = static_cast<std::size_t>(n) * ch06::kChannels;
      std::vector<float> host(total + kGuard);
      for (std::size_t i = 0; i < total; ++i) host[i] = ch06::mix_input(i + seed);
      host.resize(total);
      const auto want = ch06::mix_reference(host, m, n);
      host.resize(total + kGuard);
      cml::DeviceBuffer<float> in(total + kGuard), out(total + kGuard);
      CUDA_CHECK(cudaMemcpy(in.data(), host.data(), (total + kGuard) * 4, cudaMemcpyHostToDevice));
      CUDA_CHECK(cudaMemset(out.data(), 0xFF, (total + kGuard) * 4));
      cml::Stream s;
      ch06::mix_constant(in.data(), out.data(), n, s);
      s.synchronize();
      CUDA_CHECK(cudaMemcpy(host.data(), out.data(), (total + kGuard) * 4, cudaMemcpyDeviceToHost));
      bool guard_ok = true;
      for (std::size_t i = total; i < total + kGuard; ++i) {
        std::uint32_t bits = 0;
        std::memcpy(&bits, &host[i], 4);
        guard_ok &= bits == 0xFFFFFFFFu;
      }
      INFO("n = " << n << ": mix_constant wrote past the end of out (step 2)");
      CHECK(guard_ok);
      const auto v = cml::compare_exact(host.data(), want.data(), total);
      INFO("n = " << n << ", matrix " << seed << ": " << v.describe() << " (channel " << v.first_bad / n << ", pixel "
           << v.first_bad % n << "; the matrix must come from c_mix, which the tests change with set_mix; step 2)");
      CHECK(v.ok);
    }
  }
  for (const auto& [n, kernels] : {std::pair<int, std::size_t>{1000, 1}, {0, 0}}) {
    cml::DeviceBuffer<float> in(16000), out(16000);
    const std::string err = cml::test::enqueue_only_error([&](cudaStream_t s) { ch06::mix_constant(in.data(), out.data(), n, s); }, kernels);
    INFO("mix_constant with n = " << n << ": " << err << " (memory_spaces.cuh: only enqueues its kernel on `stream`)");
    CHECK(err.empty());
  }
}

TEST_CASE("step 2: mix_constant_kernel reads constant memory one address per warp (SASS)", "[ch06][step2][mechanism]") {
  CML_CODE(k, "mix_constant_kernel");
  const std::string err = ch06::step2_code_error(k);
  INFO(err << "(./lab run 06 -- --mode=mechanism shows it; ./lab hint 06)");
  CHECK(err.empty());
}

TEST_CASE("step 2: mix_constant is kConstantOverDivergent x faster than divergent reads (PROVISIONAL)", "[ch06][step2][perf]") {
  cml::test::device();
  const int n = 1 << 24;
  const std::size_t total = static_cast<std::size_t>(n) * ch06::kChannels;
  const auto m = ch06::mix_matrix();
  ch06::set_mix(m.data());
  ch06::set_mix_divergent(m.data());
  cml::DeviceBuffer<float> in(total), out(total);
  CUDA_CHECK(cudaMemset(in.data(), 0, total * 4));
  cml::Stream s;
  const auto st = cml::time_interleaved({[&](cudaStream_t x) { ch06::mix_divergent(in.data(), out.data(), n, x); },
                                         [&](cudaStream_t x) { ch06::mix_constant(in.data(), out.data(), n, x); }},
                                        s, {2, 10});
  INFO("mix_constant on " << n << " pixels: " << cml::ratio_text(st[0], st[1]) << " x the divergent version's speed; want "
       << kConstantOverDivergent << ": the constant cache serves one address per warp at a time (step 2; ./lab hint 06)");
  CHECK(st[0].median_ms / st[1].median_ms >= kConstantOverDivergent);
}

// ---- Step 3 -----------------------------------------------------------------------------

namespace {
struct Pitched {
  float* data = nullptr;
  std::size_t pitch = 0;
  ~Pitched() {
    if (data) cudaFree(data);
  }
};
struct Tex {
  cudaTextureObject_t t = 0;
  ~Tex() {
    if (t) cudaDestroyTextureObject(t);
  }
};
}  // namespace

TEST_CASE("step 3: rotate_texture matches the bilinear reference within the 9-bit weights' tolerance",
          "[ch06][step3][correctness]") {
  cml::test::device();
  for (const auto& rc : ch06::rotation_cases()) {
    const int w = rc.width, h = rc.height;
    std::vector<float> host(static_cast<std::size_t>(w) * h);
    for (int y = 0; y < h; ++y)
      for (int x = 0; x < w; ++x) host[static_cast<std::size_t>(y) * w + x] = ch06::image_value(x, y);
    Pitched p;
    CUDA_CHECK(cudaMallocPitch(reinterpret_cast<void**>(&p.data), &p.pitch, w * sizeof(float), h));
    CUDA_CHECK(cudaMemcpy2D(p.data, p.pitch, host.data(), w * 4, w * 4, h, cudaMemcpyHostToDevice));
    const ch06::Image img{p.data, p.pitch, w, h};
    Tex tex{ch06::create_rotation_texture(img)};
    cml::DeviceBuffer<float> out(host.size() + kGuard);
    CUDA_CHECK(cudaMemset(out.data(), 0xFF, (host.size() + kGuard) * 4));
    cml::Stream s;
    ch06::rotate_texture(tex.t, img, rc.angle, out.data(), s);
    s.synchronize();
    std::vector<float> got(host.size() + kGuard);
    CUDA_CHECK(cudaMemcpy(got.data(), out.data(), got.size() * 4, cudaMemcpyDeviceToHost));
    bool guard_ok = true;
    for (std::size_t i = host.size(); i < got.size(); ++i) {
      std::uint32_t bits = 0;
      std::memcpy(&bits, &got[i], 4);
      guard_ok &= bits == 0xFFFFFFFFu;
    }
    INFO(w << " x " << h << " (" << rc.what << "): rotate_texture wrote past the end of out (step 3)");
    CHECK(guard_ok);
    got.resize(host.size());
    const std::string miss = ch06::rotation_mismatch(got, ch06::rotation_reference(host, w, h, rc.angle), w);
    INFO(w << " x " << h << " (" << rc.what << "): " << miss
           << " — wrong at the edges only: what does a read outside the image return? everywhere, off by about half a "
              "neighbour's difference: pixel centres are at i + 0.5; a step-like result: is the texture filtering? (step 3; "
              "./lab hint 06)");
    CHECK(miss.empty());
  }
}

TEST_CASE("step 3: the rotation's texture filters linearly and reads 0 outside the image", "[ch06][step3][mechanism]") {
  cml::test::device();
  const int w = 64, h = 48;
  Pitched p;
  CUDA_CHECK(cudaMallocPitch(reinterpret_cast<void**>(&p.data), &p.pitch, w * sizeof(float), h));
  Tex tex{ch06::create_rotation_texture(ch06::Image{p.data, p.pitch, w, h})};
  INFO("create_rotation_texture returned no texture object (0): create one over the pitched image (step 3; ./lab hint 06)");
  REQUIRE(tex.t != 0);
  cudaTextureDesc d{};
  CUDA_CHECK(cudaGetTextureObjectTextureDesc(&d, tex.t));
  INFO("the texture's filter mode is " << (d.filterMode == cudaFilterModeLinear ? "linear" : "point")
       << ": the reference blends the four nearest pixels (cudaFilterModeLinear; step 3)");
  CHECK(d.filterMode == cudaFilterModeLinear);
  for (int dim = 0; dim < 2; ++dim) {
    const bool border = d.addressMode[dim] == cudaAddressModeBorder && d.borderColor[0] == 0.f;
    INFO("address mode of dimension " << dim << " is " << int(d.addressMode[dim]) << " (border colour " << d.borderColor[0]
         << "): outside the image the reference reads 0 — clamp repeats the edge pixels (cudaAddressModeBorder; step 3)");
    CHECK(border);
  }
}

TEST_CASE("step 3: rotate_texture_kernel reads through the texture unit only (SASS)", "[ch06][step3][mechanism]") {
  CML_CODE(k, "rotate_texture_kernel");
  const std::string err = ch06::step3_code_error(k);
  INFO(err << "(./lab run 06 -- --mode=mechanism shows it; ./lab hint 06)");
  CHECK(err.empty());
}
