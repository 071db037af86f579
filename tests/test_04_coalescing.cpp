// Chapter 04 — global memory coalescing: the tests of exercise.cu, step by step. Results
// against the host; mechanism from the SASS of the learner's own kernel (cuobjdump) and
// from Nsight Compute's sector and request counters, compared with the sector model;
// speed as a fraction of cudaMemcpy measured in the same process.
//
//   ./lab check 04                        against your exercise.cu
//   meson test -C build "ch04 solution"   against the solution
#include "coalescing.cuh"
#include "gpu.hpp"

#include "cml/buffers.hpp"
#include "cml/cli.hpp"
#include "cml/ncu.hpp"
#include "cml/sass.hpp"
#include "cml/sectors.hpp"
#include "cml/stream.hpp"
#include "cml/timing.hpp"
#include "cml/verify.hpp"

#include <cstdlib>
#include <cstring>
#include <initializer_list>
#include <random>
#include <string>
#include <vector>

namespace {

// n floats on the device with a known pattern, an output poisoned, and the host copy.
struct Arrays {
  explicit Arrays(std::size_t n) : in(n + 64), out(n + 64), host(n + 64) {
    std::minstd_rand rng(static_cast<unsigned>(n));
    for (auto& v : host) v = static_cast<float>(rng() % 100000) * 0.25f;
    CUDA_CHECK(cudaMemcpy(in.data(), host.data(), host.size() * 4, cudaMemcpyHostToDevice));
    poison();
  }
  void poison() { CUDA_CHECK(cudaMemset(out.data(), 0xFF, out.bytes())); }
  // out[i] == f(in[i]) for i < n, and out[n] untouched (no write past the end).
  template <typename F>
  cml::VerifyResult verify(std::size_t n, F f) const {
    std::vector<float> got(n + 1), want(n + 1);
    CUDA_CHECK(cudaMemcpy(got.data(), out.data(), (n + 1) * 4, cudaMemcpyDeviceToHost));
    for (std::size_t i = 0; i < n; ++i) want[i] = f(host[i]);
    std::uint32_t poison_bits = 0xFFFFFFFFu;
    std::memcpy(&want[n], &poison_bits, 4);
    // NaN never compares equal: compare the bits of the poisoned word.
    std::uint32_t got_bits = 0;
    std::memcpy(&got_bits, &got[n], 4);
    auto r = cml::compare_exact(got.data(), want.data(), n);
    if (r.ok && got_bits != poison_bits) {
      r.ok = false;
      r.first_bad = n;
      r.got = "a write";
      r.want = "nothing (past the end)";
      r.bad_count = 1;
    }
    return r;
  }
  cml::DeviceBuffer<float> in, out;
  std::vector<float> host;
};

// A working set four times the L2 or more, so DRAM is measured, within what is free.
std::size_t large_n() {
  const auto& d = cml::test::device();
  std::size_t bytes = std::max<std::size_t>(256u << 20, 4 * d.l2_bytes);
  while (3 * bytes > d.free_bytes && bytes > (16u << 20)) bytes /= 2;
  return bytes / 4;
}

// cudaMemcpy device to device of a's first n floats: the ceiling the copies are held to.
cml::Work memcpy_work(const Arrays& a, std::size_t n) {
  return [&a, n](cudaStream_t x) {
    CUDA_CHECK(cudaMemcpyAsync(a.out.data(), a.in.data(), n * 4, cudaMemcpyDeviceToDevice, x));
  };
}

// The copy's speed as a fraction of cudaMemcpy device to device, timed interleaved.
double fraction_of_memcpy(const cml::Work& copy, const Arrays& a, std::size_t n) {
  cml::Stream s;
  const auto st = cml::time_interleaved({memcpy_work(a, n), copy}, s, {2, 10});
  return st[0].median_ms / st[1].median_ms;
}

// For each n: runs `launch(in, out, n, stream)` over fresh arrays and checks out[i] ==
// f(in[i]) for i < n, and nothing written past n.
template <typename Launch, typename F>
void check_elementwise(std::initializer_list<std::size_t> sizes, Launch launch, F f, const char* note = "") {
  for (const std::size_t n : sizes) {
    CAPTURE(n);
    Arrays a(n);
    cml::Stream s;
    launch(a.in.data(), a.out.data(), n, s.get());
    s.synchronize();
    const auto r = a.verify(n, f);
    INFO(r.describe() << note);
    CHECK(r.ok);
  }
}

const std::vector<std::string> kLoadMetrics = {"l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum",
                                               "l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum"};

// Runs this test executable again under ncu, on the hidden [.target] case below, and
// returns each profiled kernel's sectors per request, in launch order.
std::vector<std::pair<std::string, double>> profiled_sectors_per_request(std::string& why_not) {
  const auto r = cml::ncu::profile({cml::sass::self_executable(), "[.target]"},
                                   "offset_copy|stride_copy|scale_kernel|copy_vectorized_kernel|copy_coalesced_kernel|"
                                   "advance_aos_kernel|advance_soa_kernel",
                                   kLoadMetrics,
                                   {"CML_TRACE=off", "CML_TARGET=1"});
  std::vector<std::pair<std::string, double>> out;
  if (!r.ok) {
    why_not = r.error;
    return out;
  }
  for (const auto& k : r.kernels) {
    const double req = k.values.count(kLoadMetrics[0]) ? k.values.at(kLoadMetrics[0]) : 0;
    const double sec = k.values.count(kLoadMetrics[1]) ? k.values.at(kLoadMetrics[1]) : 0;
    out.emplace_back(k.kernel, req > 0 ? sec / req : 0.0);
  }
  return out;
}

#define CML_REQUIRE_NCU(result, why)                                               \
  do {                                                                             \
    if ((result).empty()) {                                                        \
      if ((why).find("not installed") != std::string::npos ||                      \
          (why).find("ERR_NVGPUCTRPERM") != std::string::npos)                     \
        CML_SKIP(why);                                                             \
      FAIL("ncu did not give the counters: " << (why));                            \
    }                                                                              \
  } while (0)

// What the [.target] case launches, in order, with the model's sectors per request.
struct Target {
  const char* what;
  bool offset;  // offset copy, else stride copy
  std::size_t k;
  unsigned elem;
};
const std::vector<Target> kTargets = {
    {"offset 0, float", true, 0, 4},   {"offset 1, float", true, 1, 4},   {"offset 8, float", true, 8, 4},
    {"offset 31, float", true, 31, 4}, {"stride 2, float", false, 2, 4},  {"stride 4, float", false, 4, 4},
    {"stride 32, float", false, 32, 4}, {"offset 0, double", true, 0, 8}, {"offset 1, double", true, 1, 8},
    {"offset 0, float4", true, 0, 16}, {"offset 1, float4", true, 1, 16},
};
constexpr std::size_t kTargetN = std::size_t{1} << 22;

}  // namespace

// Not a test: the kernels the profile tests run under ncu (see profiled_sectors_per_request).
TEST_CASE("profile target: the chapter's kernels once each", "[.target]") {
  if (std::getenv("CML_TARGET") == nullptr) return;
  cml::DeviceBuffer<float> in(kTargetN * 4 * 33), out(kTargetN * 4);
  cml::Stream s;
  for (const auto& t : kTargets) {
    const std::size_t n = t.offset ? kTargetN : kTargetN / t.k;
    if (t.offset) ch04::launch_offset_copy(in.data(), out.data(), n, t.k, t.elem, s);
    else ch04::launch_stride_copy(in.data(), out.data(), n, t.k, t.elem, s);
  }
  ch04::scale(in.data(), out.data(), kTargetN, 2.0f, s);
  ch04::copy_vectorized(in.data(), out.data(), kTargetN, s);
  ch04::copy_coalesced(in.data(), out.data(), kTargetN, s);
  // Records and arrays of kTargetN / 16 particles, over the same (zeroed) memory.
  CUDA_CHECK(cudaMemsetAsync(in.data(), 0, kTargetN * 4 * 4, s));
  ch04::advance_aos(reinterpret_cast<ch04::Particle*>(in.data()), kTargetN / 16, 0.5f, s);
  float* f = in.data();
  const std::size_t m = kTargetN / 16;
  ch04::advance_soa(ch04::ParticlesSoA{f, f + m, f + 2 * m, f + 3 * m, f + 4 * m, f + 5 * m}, m, 0.5f, s);
  s.synchronize();
}

// ---- Step 1 ------------------------------------------------------------------------------

TEST_CASE("step 1: copy_coalesced copies every element and nothing more", "[ch04][step1][correctness]") {
  cml::test::device();
  check_elementwise({1, 37, (1u << 20) + 3}, ch04::copy_coalesced, [](float x) { return x; });
}

TEST_CASE("step 1: copy_coalesced reaches at least 0.7 of cudaMemcpy", "[ch04][step1][perf]") {
  const std::size_t n = large_n();
  Arrays a(n);
  const double f = fraction_of_memcpy([&](cudaStream_t s) { ch04::copy_coalesced(a.in.data(), a.out.data(), n, s); }, a, n);
  INFO("copy_coalesced over " << cml::format_bytes(n * 4) << " reached " << f << " of cudaMemcpy device to device; "
       "want 0.7: launch grid_for(n) blocks, loop with the grid's stride, and keep several loads in flight per "
       "thread (step 1; ./lab hint 04)");
  CHECK(f >= 0.7);
}

// ---- Step 2 ------------------------------------------------------------------------------

TEST_CASE("step 2: copy_vectorized copies every element, tails included", "[ch04][step2][correctness]") {
  cml::test::device();
  check_elementwise({1, 2, 3, 4, 5, 1023, (1u << 20) + 1, (1u << 20) + 2, (1u << 20) + 3}, ch04::copy_vectorized,
                    [](float x) { return x; }, " (the last n % 4 floats are the tail: step 2)");
}

TEST_CASE("step 2: copy_vectorized_kernel loads 16 bytes per instruction (LDG.E.128)", "[ch04][step2][mechanism]") {
  cml::test::device();
  std::vector<cml::sass::Function> fns;
  try {
    fns = cml::sass::dump(cml::sass::self_executable());
  } catch (const cml::Skip& e) {
    CML_SKIP(e.what());
  }
  const auto f = cml::sass::find(fns, "copy_vectorized_kernel");
  if (!f) FAIL("no kernel named copy_vectorized_kernel in the compiled code: keep the kernel's name");
  const std::size_t wide = cml::sass::count(*f, "LDG.E.128");
  INFO(f->name << " has " << wide << " 128-bit loads and " << cml::sass::count(*f, "LDG.E") << " 32-bit ones: load "
       "float4 through reinterpret_cast<const float4*>(in) (step 2; ./lab hint 04)");
  CHECK(wide >= 1);
}

// ---- Step 3 ------------------------------------------------------------------------------

namespace {
struct ParticleSet {
  explicit ParticleSet(std::size_t n) : aos(n) {
    std::minstd_rand rng(static_cast<unsigned>(n));
    host.resize(n);
    for (auto& p : host) {
      p = ch04::Particle{};
      p.x = static_cast<float>(rng() % 1000); p.y = static_cast<float>(rng() % 1000); p.z = static_cast<float>(rng() % 1000);
      p.vx = static_cast<float>(rng() % 9) - 4; p.vy = static_cast<float>(rng() % 9) - 4; p.vz = static_cast<float>(rng() % 9) - 4;
    }
    CUDA_CHECK(cudaMemcpy(aos.data(), host.data(), aos.bytes(), cudaMemcpyHostToDevice));
    for (int f = 0; f < 6; ++f) {
      fields.emplace_back(n);
      std::vector<float> v(n);
      for (std::size_t i = 0; i < n; ++i) v[i] = f < 3 ? ch04::position(host[i], f) : ch04::velocity(host[i], f - 3);
      CUDA_CHECK(cudaMemcpy(fields.back().data(), v.data(), n * 4, cudaMemcpyHostToDevice));
    }
    soa = ch04::ParticlesSoA{fields[0].data(), fields[1].data(), fields[2].data(),
                             fields[3].data(), fields[4].data(), fields[5].data()};
  }
  cml::DeviceBuffer<ch04::Particle> aos;
  std::vector<cml::DeviceBuffer<float>> fields;
  std::vector<ch04::Particle> host;
  ch04::ParticlesSoA soa{};
};
}  // namespace

TEST_CASE("step 3: advance_soa moves every particle exactly as the records version", "[ch04][step3][correctness]") {
  cml::test::device();
  for (const std::size_t n : {std::size_t{1}, std::size_t{1000003}}) {
    CAPTURE(n);
    ParticleSet p(n);
    cml::Stream s;
    ch04::advance_soa(p.soa, n, 0.5f, s);
    s.synchronize();
    for (int f = 0; f < 3; ++f) {
      std::vector<float> got(n), want(n);
      CUDA_CHECK(cudaMemcpy(got.data(), p.fields[f].data(), n * 4, cudaMemcpyDeviceToHost));
      for (std::size_t i = 0; i < n; ++i) want[i] = ch04::position(p.host[i], f) + ch04::velocity(p.host[i], f) * 0.5f;
      const auto r = cml::compare_exact(got.data(), want.data(), n);
      INFO("xyz"[f] << ": " << r.describe());
      CHECK(r.ok);
    }
  }
}

TEST_CASE("step 3: the arrays version is at least 1.5x faster than the records version", "[ch04][step3][perf]") {
  const std::size_t n = large_n() / 16;  // 64-byte records: the records fill the working set
  ParticleSet p(n);
  cml::Stream s;
  const auto st = cml::time_interleaved({[&](cudaStream_t x) { ch04::advance_aos(p.aos.data(), n, 0.5f, x); },
                                         [&](cudaStream_t x) { ch04::advance_soa(p.soa, n, 0.5f, x); }},
                                        s, {2, 10});
  const double speedup = st[0].median_ms / st[1].median_ms;
  INFO("records " << cml::format_ms(st[0].median_ms) << ", arrays " << cml::format_ms(st[1].median_ms) << ": "
       << speedup << "x; want 1.5x (step 3: a grid-stride loop over grid_for(n) blocks)");
  CHECK(speedup >= 1.5);
}

// ---- Step 4 ------------------------------------------------------------------------------

TEST_CASE("step 4: scale multiplies every element and writes nothing more", "[ch04][step4][correctness]") {
  cml::test::device();
  check_elementwise({1, 33, (1u << 20) + 5},
                    [](const float* in, float* out, std::size_t n, cudaStream_t s) { ch04::scale(in, out, n, 3.0f, s); },
                    [](float x) { return x * 3.0f; });
}

// scale moves the same bytes as the chapter's own one-float-per-thread coalesced copy
// (offset_copy at offset 0), so it is held to that copy's speed: this measures the access
// pattern alone, whatever the GPU's bytes in flight allow (step 1 is where those count).
TEST_CASE("step 4: scale runs as fast as the chapter's plain coalesced copy", "[ch04][step4][perf]") {
  const std::size_t n = large_n();
  Arrays a(n);
  cml::Stream s;
  const auto st = cml::time_interleaved(
      {[&](cudaStream_t x) { ch04::launch_offset_copy(a.in.data(), a.out.data(), n, 0, 4, x); },
       [&](cudaStream_t x) { ch04::scale(a.in.data(), a.out.data(), n, 3.0f, x); }, memcpy_work(a, n)},
      s, {2, 10});
  const double f = st[0].median_ms / st[1].median_ms;
  INFO("scale over " << cml::format_bytes(n * 4) << " took " << cml::format_ms(st[1].median_ms) << ", the plain coalesced "
       "copy " << cml::format_ms(st[0].median_ms) << ": " << f << " of its speed (" << st[2].median_ms / st[1].median_ms
       << " of cudaMemcpy); want 0.85: consecutive threads must read consecutive elements (step 4; ./lab hint 04)");
  CHECK(f >= 0.85);
}

TEST_CASE("step 4 and the model: sectors per request match the sector model within 5%", "[ch04][step4][mechanism][profile]") {
  cml::test::device();
  std::string why;
  const auto measured = profiled_sectors_per_request(why);
  CML_REQUIRE_NCU(measured, why);
  REQUIRE(measured.size() == kTargets.size() + 5);
  for (std::size_t i = 0; i < kTargets.size(); ++i) {
    const auto& t = kTargets[i];
    const double model = t.offset ? cml::sectors_per_request(0, 64, 1, t.k, t.elem)
                                  : cml::sectors_per_request(0, 64, t.k, 0, t.elem);
    INFO(t.what << ": ncu " << measured[i].second << " sectors per request, model " << model << " (" << measured[i].first << ")");
    CHECK(measured[i].second == Approx(model).epsilon(0.05));
  }
  // The learner's kernels and the records update, against the model (launch order above).
  struct Expect { const char* what; double model; const char* advice; };
  const Expect learner[] = {
      {"scale_kernel", cml::sectors_per_request(0, 64, 1, 0, 4),
       "consecutive threads must read consecutive elements (step 4; ./lab hint 04)"},
      {"copy_vectorized_kernel", cml::sectors_per_request(0, 64, 1, 0, 16), "load float4 (step 2)"},
      {"copy_coalesced_kernel", cml::sectors_per_request(0, 64, 1, 0, 4), "a grid-stride loop over floats (step 1)"},
      {"advance_aos_kernel", cml::sectors_per_request(0, 64, 16, 0, 4), "(provided: records 64 bytes apart)"},
      {"advance_soa_kernel", cml::sectors_per_request(0, 64, 1, 0, 4), "one array per field (step 3)"},
  };
  const std::size_t base = kTargets.size();
  for (std::size_t i = 0; i < 5; ++i) {
    // The target launches scale, vectorized, coalesced, then records, then arrays.
    const double spr = measured[base + i].second;
    INFO(learner[i].what << ": ncu " << spr << " sectors per request, model " << learner[i].model << ": "
         << learner[i].advice << " (" << measured[base + i].first << ")");
    CHECK(spr == Approx(learner[i].model).epsilon(0.05));
  }
}
