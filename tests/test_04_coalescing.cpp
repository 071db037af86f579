// Chapter 04 — global memory coalescing: the tests of exercise.cu, step by step. Results
// against the host; mechanism from the SASS of the learner's own kernel (cuobjdump) and
// from Nsight Compute's sector and request counters, compared with the sector model;
// speed as a fraction of cudaMemcpy measured in the same process.
//
//   ./lab check 04                        against your exercise.cu
//   meson test -C build "ch04 solution"   against the solution
//   build/tests/test_ch04_solution "[.measure]"   the bars' correct side (and step 1's mistake), five runs

#include "test_04_coalescing.hpp"

namespace {

// What each bar assumes of the hardware, and what a smaller GPU changes: docs/every-gpu.md.
// ---- Bars ----------------------------------------------------------------------------------
// Each bar sits mid-gap between the slowest correct answer and the fastest taught mistake,
// five runs of each side: build/tests/test_ch04_solution "[.measure]" for the solution, and
// the same case built with a mutant of tools/mutant_cases/ch04.py for each mistake. The
// measurements are in docs/04_coalescing.md, "Speed bars: the measurements behind them".
// Step 1: the learner's copy's speed over the plain one-float-per-thread grid-stride loop's
// (offset_copy at offset 0), timed interleaved in the same run: the plain loop itself is
// the mistake step 1 names.
constexpr double kStep1OverPlain = 1.10;
// Step 2: copy_vectorized's speed over the same plain loop's. Where the plain loop already
// keeps DRAM busy (a small GPU) the two are equal, hence 0.9, not 1; the bar holds the
// loop (or grid) to copying each float4 once: a loop that steps by a block copies the
// array once per block, hundreds of times slower.
constexpr double kStep2OverPlain = 0.9;
// Step 3: records' time over arrays' time (the arrays move 24 of every 64 bytes the records
// do, read and written): the records left in place give 1.0 by construction.
constexpr double kStep3Speedup = 2.0;
// Step 4: scale's speed over the plain coalesced copy's (same bytes moved): the starter's
// runs of 32 elements per thread fall far below.
constexpr double kStep4OverPlain = 0.55;
}  // namespace

// The memcheck target's array: n % 4 == 3, so the last group holds 3 floats and a float4
// read of it runs 4 bytes past the end — inside the allocation's last 16 bytes, where no
// guard page can be, but past the size asked of cudaMalloc, which memcheck knows. (Not
// where the fourth float is never used: docs/04_coalescing.md, "The tail".)
constexpr std::size_t kExactN = (std::size_t{1} << 16) + 3;

// Not a test: the kernels the profile tests run under ncu (see profiled_sectors_per_request),
// with CML_TARGET=coalesced step 1's copy alone, or, with CML_TARGET=vectorized-exact,
// copy_vectorized once on arrays of exactly kExactN floats (the memcheck case of step 2).
TEST_CASE("profile target: the chapter's kernels once each", "[.target]") {
  const auto target = cml::test::target_name();
  if (!target) return;
  if (*target == "vectorized-exact") {
    cml::DeviceBuffer<float> in(kExactN), out(kExactN);
    cml::Stream s;
    CUDA_CHECK(cudaMemsetAsync(in.data(), 0, kExactN * sizeof(float), s));
    ch04::copy_vectorized(in.data(), out.data(), kExactN, s);
    s.synchronize();
    return;
  }
  if (*target == "coalesced") {  // step 1's case, whatever the later steps' launchers do yet
    cml::DeviceBuffer<float> in(kTargetN), out(kTargetN);
    cml::Stream s;
    ch04::copy_coalesced(in.data(), out.data(), kTargetN, s);
    s.synchronize();
    return;
  }
  cml::DeviceBuffer<float> in(kTargetN * 4 * 33), out(kTargetN * 4);
  cml::Stream s;
  for (const auto& t : kTargets) t.launch(in.data(), out.data(), t.kind == t.Offset ? kTargetN : kTargetN / t.k, s);
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

CML_INTEGRITY_CASE(04, "04_coalescing")

TEST_CASE("step 1: copy_coalesced copies every element and nothing more", "[ch04][step1][correctness]") {
  cml::test::device();
  const std::size_t beyond = 3 * one_pass_threads() + 5;  // past one pass of a grid_for grid
  check_elementwise("copy_coalesced", {1, 37, jitter((1u << 20) + 3), jitter(beyond)}, ch04::copy_coalesced,
                    [](float x) { return x; });
}

TEST_CASE("step 1: copy_coalesced copies past 2^31 elements, where the GPU has room for them",
          "[ch04][step1][correctness]") {
  constexpr std::size_t n = (std::size_t{1} << 31) + 37;
  cml::test::check_past_int_range(
      "copy_coalesced over 2^31 + 37 floats", n,
      [](const float* in, float* out, cudaStream_t s) { ch04::copy_coalesced(in, out, n, s); },
      [](float x) { return x; }, "step 1; ./lab hint 04");
}

TEST_CASE("step 1: copy_coalesced only enqueues copy_coalesced_kernel, alone, on the stream it is given",
          "[ch04][step1][mechanism]") {
  cml::test::device();
  CML_REQUIRE_TRACING();
  const std::size_t n = jitter(1u << 20);
  const ch04::Arrays a(n);
  const std::string why = runs_only("copy_coalesced_kernel",
                                    [&](cudaStream_t s) { ch04::copy_coalesced(a.in.data(), a.out.data(), n, s); });
  INFO(why << " (step 1)");
  CHECK(why.empty());
}

TEST_CASE(
    "step 1: copy_coalesced's grid fills the GPU with no block left without work, at sizes grid_for's cap does not "
    "hide",
    "[ch04][step1][mechanism]") {
  CML_REQUIRE_TRACING();
  cml::test::device();
  const GridRule rule = one_thread_per_item("copy_coalesced", "floats", "one thread per float",
                                            "grid_for(n) blocks of 256 threads is such a grid (step 1; ./lab hint 04)");
  check_grid(rule, grid_sizes(1), [](std::size_t n) {
    const ch04::Arrays a(n);
    return cml::test::launched_kernel("copy_coalesced_kernel",
                                      [&](cudaStream_t s) { ch04::copy_coalesced(a.in.data(), a.out.data(), n, s); });
  });
}

TEST_CASE("step 1: copy_coalesced keeps more loads in flight than the plain grid-stride loop", "[ch04][step1][perf]") {
  check_over_plain("copy_coalesced", large_n(), ch04::copy_coalesced, kStep1OverPlain,
                   "every SM busy, consecutive threads on consecutive floats, and several loads in flight per thread "
                   "before any store (step 1; ./lab hint 04)");
}

TEST_CASE("step 1: copy_coalesced_kernel's loads touch the sectors the model gives a warp of consecutive floats (ncu)",
          "[ch04][step1][mechanism][profile]") {
  cml::test::device();
  std::string why;
  const auto measured = profiled_sectors_per_request(why, "coalesced");
  CML_REQUIRE_NCU(measured, why);
  const auto it = std::find_if(measured.begin(), measured.end(), [](const auto& k) {
    return k.first.find("copy_coalesced_kernel") != std::string::npos;
  });
  {
    INFO("ncu profiled no copy_coalesced_kernel: copy_coalesced launches one kernel of that name (step 1)"
         << (why.empty() ? "" : "; the profiled run said: " + why));
    REQUIRE(it != measured.end());
  }
  const double model = ch04::Pattern{}.model_sectors_per_request();
  INFO("copy_coalesced_kernel: ncu counts " << it->second << " sectors per load request, the model " << model
                                            << " (a warp reading 32 consecutive floats); more means the lanes of a "
                                               "warp read floats apart: in each load, consecutive threads read "
                                               "consecutive floats, and a thread's loads are a whole grid apart "
                                               "(step 1; ./lab hint 04)");
  CHECK(it->second == Approx(model).epsilon(0.05));
}

// ---- Step 2 ------------------------------------------------------------------------------

TEST_CASE("step 2: copy_vectorized copies every element, tails included", "[ch04][step2][correctness]") {
  cml::test::device();
  // The largest is four floats per thread past three passes of the largest grid_for grid: a
  // kernel that neither loops nor launches enough threads to cover the array leaves a gap.
  const std::size_t beyond = 4 * 3 * one_pass_threads();
  check_elementwise(
      "copy_vectorized",
      {1, 2, 3, 4, 5, 7, 1023, (1u << 20) + 1, (1u << 20) + 2, (1u << 20) + 3, jitter(1u << 20), beyond + 1, beyond + 2,
       beyond + 3, jitter(beyond)},
      ch04::copy_vectorized, [](float x) { return x; },
      " (the last n % 4 floats are the tail; a size past one pass of the grid needs a loop or a grid "
      "that covers the array: step 2)");
}

TEST_CASE(
    "step 2: copy_vectorized reads and writes nothing past the array's end, not even inside its last 16 bytes "
    "(memcheck)",
    "[ch04][step2][mechanism]") {
  cml::test::device();
  CML_CHECK_SANITIZER(
      "memcheck", "vectorized-exact",
      "an access past the last of "
          << kExactN
          << " floats: the last n % 4 floats are not a whole "
             "float4 — copy them one at a time, never as a 16-byte access that runs past the end (step 2; "
             "./lab hint 04)");
}

TEST_CASE(
    "step 2: copy_vectorized_kernel loads and stores 16 bytes per instruction, and is what copy_vectorized only "
    "enqueues, on the stream it is given",
    "[ch04][step2][mechanism]") {
  cml::test::device();
  CML_KERNEL_SASS(f, "copy_vectorized_kernel");
  {
    const std::size_t wide = cml::sass::count(*f, "LDG.E.128");
    INFO(f->name << " has " << wide << " 128-bit loads and " << cml::sass::count(*f, "LDG") - wide
                 << " narrower ones: load 16 bytes per instruction (step 2; ./lab hint 04)");
    REQUIRE(wide >= 1);
  }
  {
    const std::size_t wide = cml::sass::count(*f, "STG.E.128");
    INFO(f->name << " has " << wide << " 128-bit stores and " << cml::sass::count(*f, "STG") - wide
                 << " narrower ones: store 16 bytes per instruction too (step 2)");
    REQUIRE(wide >= 1);
  }
  if (cml::trace::disabled_by_environment()) return;
  const std::size_t n = jitter(1u << 20);
  const ch04::Arrays a(n);
  std::string ran;
  const std::string why = runs_only(
      "copy_vectorized_kernel", [&](cudaStream_t s) { ch04::copy_vectorized(a.in.data(), a.out.data(), n, s); }, &ran);
  {
    INFO(why << " (step 2)");
    REQUIRE(why.empty());
  }
  // The kernel that ran is the one whose code was read: CUPTI's name for it is the SASS
  // function's (demangled, or mangled where CUPTI could not demangle), parameters aside.
  const auto bare = [](const std::string& name) { return name.substr(0, name.find('(')); };
  INFO("the kernel that ran is " << ran << ", the SASS read is " << f->name
                                 << ": the 16-byte accesses must be "
                                    "in the kernel that copies (step 2)");
  CHECK((bare(ran) == bare(f->name) || ran == f->mangled));
}

TEST_CASE("step 2: copy_vectorized's grid has at most a thread per float4 and per tail float, and fills the GPU",
          "[ch04][step2][mechanism]") {
  CML_REQUIRE_TRACING();
  cml::test::device();
  const GridRule rule{"copy_vectorized",
                      "floats",
                      "one thread per float4 group and per tail float",
                      "a covering grid has (n / 4 + n % 4 + 255) / 256 blocks of 256, a loop over the groups "
                      "grid_for(n / 4) (step 2; ./lab hint 04)",
                      [](std::size_t n) { return std::uint64_t{n / 4}; },
                      [](std::size_t n) { return std::uint64_t{n / 4 + n % 4}; }};
  check_grid(rule, grid_sizes(4), [](std::size_t n) {
    const ch04::Arrays a(n);
    return cml::test::launched_kernel("copy_vectorized_kernel",
                                      [&](cudaStream_t s) { ch04::copy_vectorized(a.in.data(), a.out.data(), n, s); });
  });
}

TEST_CASE("step 2: copy_vectorized copies at least as fast as the plain one-float-per-thread loop",
          "[ch04][step2][perf]") {
  check_over_plain("copy_vectorized", large_n() + 3, ch04::copy_vectorized, kStep2OverPlain,  // a tail of 3 floats
                   "each float4 is copied once, by one thread, and a thread that loops steps over the whole grid, not "
                   "one block (step 2; ./lab hint 04)");
}

// ---- Step 3 ------------------------------------------------------------------------------

TEST_CASE("step 3: advance_soa moves every particle exactly as the records version", "[ch04][step3][correctness]") {
  cml::test::device();
  for (const std::size_t n : {std::size_t{1}, std::size_t{33}, jitter(1000003), jitter(3 * one_pass_threads())}) {
    CAPTURE(n);
    const ch04::Particles p(n);
    cml::Stream s;
    ch04::advance_soa(p.soa, n, 0.5f, s);
    s.synchronize();
    for (int f = 0; f < 3; ++f) {
      const auto r = p.verify_axis(f, 0.5f);
      INFO("xyz"[f] << ": " << r.describe());
      CHECK(r.ok);
    }
  }
}

TEST_CASE("step 3: advance_soa only enqueues advance_soa_kernel, alone, on the stream it is given",
          "[ch04][step3][mechanism]") {
  cml::test::device();
  CML_REQUIRE_TRACING();
  const std::size_t n = jitter(100003);
  const ch04::Particles p(n);
  const std::string why =
      runs_only("advance_soa_kernel", [&](cudaStream_t s) { ch04::advance_soa(p.soa, n, 0.5f, s); });
  INFO(why << " (step 3)");
  CHECK(why.empty());
}

TEST_CASE(
    "step 3: advance_soa's grid fills the GPU with no block left without a particle, at sizes grid_for's cap does not "
    "hide",
    "[ch04][step3][mechanism]") {
  CML_REQUIRE_TRACING();
  cml::test::device();
  const GridRule rule =
      one_thread_per_item("advance_soa", "particles", "one thread per particle",
                          "grid_for(n) blocks of 256 threads, as step 1's copy (step 3; ./lab hint 04)");
  check_grid(rule, grid_sizes(1), [](std::size_t n) {
    const ch04::Particles p(n);
    return cml::test::launched_kernel("advance_soa_kernel",
                                      [&](cudaStream_t s) { ch04::advance_soa(p.soa, n, 0.5f, s); });
  });
}

TEST_CASE("step 3: the arrays version is much faster than the records version", "[ch04][step3][perf]") {
  const std::size_t n = large_n() / 16;  // 64-byte records: the records fill the working set
  const ch04::Particles p(n);
  cml::Stream s;
  const auto st = cml::time_interleaved({[&](cudaStream_t x) { ch04::advance_aos(p.aos.data(), n, 0.5f, x); },
                                         [&](cudaStream_t x) { ch04::advance_soa(p.soa, n, 0.5f, x); }},
                                        s, {2, 10});
  const double speedup = st[0].median_ms / st[1].median_ms;
  INFO("records " << cml::with_noise(st[0]) << ", arrays " << cml::with_noise(st[1])
                  << ": speed-up "
                     "(records' time over arrays') "
                  << cml::ratio_text(st[0], st[1]) << "; want " << kStep3Speedup
                  << "x: each warp should read only the fields it uses, from every SM "
                     "(step 3; ./lab hint 04)");
  CHECK(speedup >= kStep3Speedup);
}

// ---- Step 4 ------------------------------------------------------------------------------

TEST_CASE("step 4: scale multiplies every element and writes nothing more", "[ch04][step4][correctness]") {
  cml::test::device();
  check_elementwise(
      "scale", {1, 33, jitter((1u << 20) + 5), jitter(3 * one_pass_threads())},
      [](const float* in, float* out, std::size_t n, cudaStream_t s) { ch04::scale(in, out, n, 3.0f, s); },
      [](float x) { return x * 3.0f; });
}

TEST_CASE("step 4: scale multiplies past 2^31 elements, where the GPU has room for them",
          "[ch04][step4][correctness]") {
  constexpr std::size_t n = (std::size_t{1} << 31) + 37;
  cml::test::check_past_int_range(
      "scale over 2^31 + 37 floats", n,
      [](const float* in, float* out, cudaStream_t s) { ch04::scale(in, out, n, 2.0f, s); },
      [](float x) { return 2.0f * x; }, "step 4; ./lab hint 04");
}

TEST_CASE("step 4: scale only enqueues scale_kernel, alone, on the stream it is given", "[ch04][step4][mechanism]") {
  cml::test::device();
  CML_REQUIRE_TRACING();
  const std::size_t n = jitter(1u << 20);
  const ch04::Arrays a(n);
  const std::string why =
      runs_only("scale_kernel", [&](cudaStream_t s) { ch04::scale(a.in.data(), a.out.data(), n, 3.0f, s); });
  INFO(why << " (step 4)");
  CHECK(why.empty());
}

TEST_CASE("step 4: scale's grid fills the GPU with no block left without work, at sizes grid_for's cap does not hide",
          "[ch04][step4][mechanism]") {
  CML_REQUIRE_TRACING();
  cml::test::device();
  const GridRule rule = one_thread_per_item("scale", "floats", "one thread per float",
                                            "grid_for(n) blocks of 256 threads, thread t taking elements t, t + T, "
                                            "t + 2T, ... (step 4; ./lab hint 04)");
  check_grid(rule, grid_sizes(1), [](std::size_t n) {
    const ch04::Arrays a(n);
    return cml::test::launched_kernel("scale_kernel",
                                      [&](cudaStream_t s) { ch04::scale(a.in.data(), a.out.data(), n, 3.0f, s); });
  });
}

// scale moves the same bytes as the chapter's own one-float-per-thread coalesced copy
// (offset_copy at offset 0), so it is held to that copy's speed: this measures the access
// pattern alone, whatever the GPU's bytes in flight allow (step 1 is where those count).
TEST_CASE("step 4: scale runs as fast as the chapter's plain coalesced copy", "[ch04][step4][perf]") {
  const std::size_t n = large_n();
  const ch04::Arrays a(n);
  cml::Stream s;
  const auto st = cml::time_interleaved(
      {[&](cudaStream_t x) { ch04::launch_offset_copy(a.in.data(), a.out.data(), n, 0, 4, x); },
       [&](cudaStream_t x) { ch04::scale(a.in.data(), a.out.data(), n, 3.0f, x); }, a.memcpy_work(n)},
      s, {2, 10});
  const double f = st[0].median_ms / st[1].median_ms;
  INFO("scale over " << cml::format_bytes(n * 4) << " took " << cml::with_noise(st[1])
                     << ", the plain coalesced "
                        "copy "
                     << cml::with_noise(st[0])
                     << ": its speed as a fraction of the copy's (the "
                        "copy's time over scale's) "
                     << cml::ratio_text(st[0], st[1]) << ", of cudaMemcpy's " << cml::ratio_text(st[2], st[1])
                     << "; want " << kStep4OverPlain
                     << ": consecutive threads must read consecutive elements (step 4; "
                        "./lab hint 04)");
  CHECK(f >= kStep4OverPlain);
}

TEST_CASE("step 4 and the model: sectors per request match the sector model within 5%",
          "[ch04][step4][mechanism][profile]") {
  cml::test::device();
  std::string why;
  const auto measured = profiled_sectors_per_request(why);
  CML_REQUIRE_NCU(measured, why);
  {
    std::string names;
    for (const auto& m : measured) names += (names.empty() ? "" : ", ") + m.first;
    INFO("ncu profiled "
         << measured.size() << " kernels (" << names << "); want " << kTargets.size() + 5 << ": the chapter's "
         << kTargets.size()
         << " and one per launcher (scale, copy_vectorized, copy_coalesced, "
            "advance_aos, advance_soa). A launcher that launches nothing (step 3's, as shipped) or more than one "
            "kernel shifts the list"
         << (why.empty() ? "" : "; the profiled run said: " + why));
    REQUIRE(measured.size() == kTargets.size() + 5);
  }
  for (std::size_t i = 0; i < kTargets.size(); ++i) {
    const auto& t = kTargets[i];
    const double model = t.model_sectors_per_request();
    INFO(t.name() << ": ncu " << measured[i].second << " sectors per request, model " << model << " ("
                  << measured[i].first << ")");
    CHECK(measured[i].second == Approx(model).epsilon(0.05));
  }
  // The learner's kernels and the records update, against the model (launch order above).
  struct Expect {
    const char* what;
    double model;
    const char* advice;
  };
  const ch04::Pattern floats{}, float4s{ch04::Pattern::Offset, 0, 16}, records{ch04::Pattern::Stride, 16, 4};
  const Expect learner[] = {
      {"scale_kernel", floats.model_sectors_per_request(),
       "consecutive threads must read consecutive elements (step 4; ./lab hint 04)"},
      {"copy_vectorized_kernel", float4s.model_sectors_per_request(), "load float4 (step 2)"},
      {"copy_coalesced_kernel", floats.model_sectors_per_request(), "a grid-stride loop over floats (step 1)"},
      {"advance_aos_kernel", records.model_sectors_per_request(), "(provided: records 64 bytes apart)"},
      {"advance_soa_kernel", floats.model_sectors_per_request(), "one array per field (step 3)"},
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

// ---- The bars' figures, for the maintainer: five runs. Not run by ./lab check. -------------
// This build's kernels (the solution's, in test_ch04_solution) against the same references
// the tests use. Step 1's mistake, the plain loop, is the reference itself: timed twice,
// its ratio shows the noise around 1. The other mistakes are kernels, so they are measured
// as mutants (tools/mutants.py, see the report of issue 10), with the same test cases.
TEST_CASE("step 1: measure the bars' figures", "[ch04][step1][.measure]") {
  const auto& dev = cml::test::device();
  std::printf("device %s\n", dev.name.c_str());
  const std::size_t n = large_n();
  const ch04::Arrays a(n);
  const ch04::Particles p(n / 16);
  cml::Stream s;
  const cml::Work plain = [&](cudaStream_t x) { ch04::launch_offset_copy(a.in.data(), a.out.data(), n, 0, 4, x); };
  for (int run = 0; run < 5; ++run) {
    const auto st = cml::time_interleaved(
        {plain, [&](cudaStream_t x) { ch04::copy_coalesced(a.in.data(), a.out.data(), n, x); }, plain,
         [&](cudaStream_t x) { ch04::scale(a.in.data(), a.out.data(), n, 3.0f, x); }, a.memcpy_work(n),
         [&](cudaStream_t x) { ch04::copy_vectorized(a.in.data(), a.out.data(), n, x); },
         [&](cudaStream_t x) { ch04::advance_aos(p.aos.data(), n / 16, 0.5f, x); },
         [&](cudaStream_t x) { ch04::advance_soa(p.soa, n / 16, 0.5f, x); }},
        s, {2, 10});
    std::printf("run %d over %s:\n", run, cml::format_bytes(n * 4).c_str());
    std::printf(
        "  step 1 copy_coalesced over the plain loop %s; the plain loop over itself (the mistake) %s "
        "(bar %.2f)\n",
        cml::ratio_text(st[0], st[1]).c_str(), cml::ratio_text(st[0], st[2]).c_str(), kStep1OverPlain);
    std::printf("  step 3 records over arrays %s (bar %.2f)\n", cml::ratio_text(st[6], st[7]).c_str(), kStep3Speedup);
    std::printf("  step 4 scale over the plain loop %s (bar %.2f)\n", cml::ratio_text(st[0], st[3]).c_str(),
                kStep4OverPlain);
    std::printf("  step 2 copy_vectorized over the plain loop %s (bar %.2f)\n", cml::ratio_text(st[0], st[5]).c_str(),
                kStep2OverPlain);
    std::printf("  bench copy_vectorized over cudaMemcpy %s (target 0.97); plain loop over cudaMemcpy %s\n",
                cml::ratio_text(st[4], st[5]).c_str(), cml::ratio_text(st[4], st[0]).c_str());
  }
  std::fflush(stdout);
  SUCCEED();
}
