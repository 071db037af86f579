// Chapter 08 — cp.async in PTX, bulk copies and TMA: the tests of exercise.cu, step by step.
// Results against the CPU at lengths that are not multiples of 4 words, of 16 bytes, of the
// tile or of the stages (and, for the tile copy, zeros past the end, not garbage); the
// header's promises (one kernel on the given stream, partials written for every block and
// nothing past them, stages checked); mechanism from the SASS of the learner's own kernels
// (each cp.async width and cache level its own LDGSTS, the src-size operand's .ZFILL, a
// .shared address and not a generic pointer, the wait_group count of each stage count,
// UBLKCP.S.G, UTMALDG.2D and the mbarrier's SYNCS on sm_90); the wrapper's compile-time
// refusal of a size the instruction does not take (nvcc on a probe); compute-sanitizer
// racecheck and memcheck on small runs of each kernel; speed relative to kernels timed
// interleaved in the same process. A kernel that waits on an mbarrier uses device.cuh's
// wait_phase, which gives up on a phase that never completes and says where: the test then
// names the mistake instead of hanging (a wait of the learner's own that never ends is
// the watchdog's: each case runs in a process of its own).
//
//   ./lab check 08                                   against your exercise.cu
//   meson test -C build "ch08 solution"              against the solution
//   build/tests/test_ch08_solution "[.measure]"      both sides of the speed bars, five runs each
#include "test_08_cp_async_ptx.hpp"

#include "cml/exit_codes.hpp"

#include <cstdlib>

namespace {

// ---- Speed ----------------------------------------------------------------------------------

using Timed = std::function<void(const Word* in, std::size_t n, Word* partial, int blocks, cudaStream_t)>;

Timed timed_1d(SumFn fn, int stages) {
  return [fn, stages](const Word* in, std::size_t n, Word* partial, int blocks, cudaStream_t s) {
    fn(ch08::make_job(in, n, partial, blocks, 0, stages), s);
  };
}

// TMA over the array's rows of 8192 words (32 KiB apart: no padding needed), with the
// learner's box.
Timed timed_tma(int stages) {
  return [stages](const Word* in, std::size_t n, Word* partial, int blocks, cudaStream_t s) {
    ch08::Matrix m;
    m.data = in;
    m.cols = m.pitch = 8192;
    m.rows = n / 8192;
    ch08::sum_tma(ch08::make_matrix_job(m, partial, blocks, 0, stages), s);
  };
}

// The array every speed bar times (tile_sum_checks.hpp), in whole rows of 8192 words, for TMA.
struct TimedArray : cml::test::TimedWords {
  explicit TimedArray(int per_sm) : TimedWords(per_sm, 8192) {}
  cml::Work work(const Timed& f) const {
    return [this, f](cudaStream_t s) { f(in.data(), n, partial.data(), blocks, s); };
  }
};

// Every timed function on the same large array at `per_sm` blocks per SM, no compute,
// interleaved: their Stats in order.
std::vector<cml::Stats> time_all(const std::vector<Timed>& fns, int per_sm) {
  const TimedArray t(per_sm);
  std::vector<cml::Work> work;
  for (const auto& f : fns) work.push_back(t.work(f));
  return cml::test::time_together(work);
}

// A step's speed bar, at 3 stages, `per_sm` blocks per SM and no compute: `fn` (named
// `name`) reaches `bar` of `base`'s speed; `then` follows the bar in the message.
void check_pipeline_speed(const char* name, const Timed& fn, const char* base_name, const Timed& base, int per_sm,
                          double bar, const std::string& then, const char* step) {
  const auto st = time_all({base, fn}, per_sm);
  cml::test::check_bar(st[0], st[1], bar,
                       std::string(name) + " at 3 stages, " + std::to_string(per_sm) + " blocks per SM, no compute",
                       base_name, then + " (" + step + "; ./lab hint 08)");
}

// What each bar assumes of the hardware, and what a smaller GPU changes: docs/every-gpu.md.
// The speed bars: each a ratio to a kernel timed interleaved in the same process, in the
// middle of the gap between the solution and the fastest mistake its step teaches (five
// runs each: "[.measure]" below; docs/08_cp_async_ptx.md, "Speed bars", has both sides on
// both GPUs). The mistakes' sides are 1.0 by construction: the same kernel without the
// overlap, or with the narrower copies. Where the gap is wide, the middle is geometric.
//   Step 2, 2 blocks per SM: 3 stages over the same kernel at 1 stage (the solution about
//   1.8; cp.async.wait_group 0, no overlap, 1.0).
constexpr double kStagesOverOne = 1.35;
//   Step 3, 4 blocks per SM: the 16-byte copies over step 2's 4-byte ones, both at 3
//   stages. The H100's gap is narrow (about 1.07: its 4-byte pipeline nearly saturates
//   memory already), so the bar is its middle, and the SASS test (LDGSTS.E.BYPASS.128 only)
//   is what names the mistake on both GPUs.
constexpr double kFastOverPipeline = 1.035;
//   Step 4, 2 blocks per SM: bulk copies at 3 stages over 1 stage (a fetch issued only
//   after the wait, no tile ahead: 1.0).
constexpr double kBulkStagesOverOne = 1.35;
//   Step 5, 4 blocks per SM: the TMA pipeline at the learner's plan over the read-only
//   kernel (the mistake: 4 KiB boxes, one tile per wait, 0.68 on the H200 against 0.93 for
//   16-row boxes; docs/08, "Speed bars", has both sides).
constexpr double kTmaOverReadOnly = 0.80;
//   Step 5's box, as a mechanism: 4 KiB boxes pass the bar on the H100 (0.92 of read-only;
//   docs/08, "Speed bars"), and on the H200 8 KiB boxes ran level with 16 KiB.
constexpr std::size_t kMinBoxBytes = 8 * 1024;

}  // namespace

// Not a test: what the sanitizer tests run. CML_TARGET=<tool>:<target> runs one learner
// kernel once, on inputs allocated as input_words says: copy (the .cg tile copy, 5 tiles + 6 words),
// reverse (the experiment's barrier reading), pipeline (3 tiles + 6 words, 2 blocks,
// 3 stages), fast and bulk (7 tiles + 3 words), tma (a 9 x 257 matrix, pitch 260).
TEST_CASE("sanitizer target: one learner kernel on a small ragged input", "[.target]") {
  const std::string target = cml::test::target_name().value_or("");  // "": a normal run, nothing to launch
  std::string err;
  if (target == "copy") {
    err = copy_error(ch08::copy_kinds().back(), 5 * ch08::kTileWords + 6, 2);
  } else if (target == "reverse") {
    const auto a = ch08::experiment_input(64);
    cml::DeviceBuffer<int> a_d(64), b_d(64);
    CUDA_CHECK(cudaMemcpy(a_d.data(), a.data(), 64 * sizeof(int), cudaMemcpyHostToDevice));
    ch08::reverse_warp(ch08::Reverse::own, a_d.data(), b_d.data(), 32, nullptr);
    ch08::reverse_warp(ch08::Reverse::neighbour_synced, a_d.data(), b_d.data(), 64, nullptr);
    CUDA_CHECK(cudaDeviceSynchronize());
  } else if (target == "pipeline") {
    const auto o = sums(ch08::sum_pipeline, "sum_pipeline", 3 * ch08::kTileWords + 6, 2, 0, 3);
    err = o.wrong + o.stalled;
  } else if (target == "fast" || target == "bulk") {
    const auto o = sums(target == "fast" ? ch08::sum_fast : ch08::sum_bulk, target == "fast" ? "sum_fast" : "sum_bulk",
                        7 * ch08::kTileWords + 3, 2, 0, 3);
    err = o.wrong + o.stalled;
  } else if (target == "tma") {
    const auto o = box_sums(ch08::matrix_cases()[6], 0, 3);  // 9 x 257, pitch 260
    err = o.wrong + o.stalled;
  }
  if (!err.empty()) std::printf("%s: %s\n", target.c_str(), err.c_str());
}

// Not a test: what ./lab profile 08 runs under ncu (chapters/08_cp_async_ptx/profile.json).
// CML_TARGET=timed-<kernel> runs that learner kernel once as its speed bar times it, at 3
// stages, no compute: timed-pipeline and timed-bulk at 2 blocks per SM, timed-fast at 4,
// timed-tma at 4 with tma_plan's stages (bulk and tma need sm_90: the run says so and skips).
TEST_CASE("profile target: one learner kernel as its speed bar runs it", "[.target]") {
  const auto target = cml::test::target_name();
  if (!target || target->rfind("timed-", 0) != 0) return;
  const std::string what = target->substr(6);
  if ((what == "bulk" || what == "tma") && cml::test::device().cc_major < 9) {
    std::printf("%s needs compute capability 9.0 (this GPU has %d.%d)\n", target->c_str(), cml::test::device().cc_major,
                cml::test::device().cc_minor);
    std::exit(cml::kExitSkip);
  }
  Timed fn;
  int per_sm = 2;
  if (what == "pipeline") {
    fn = timed_1d(ch08::sum_pipeline, 3);
  } else if (what == "fast") {
    fn = timed_1d(ch08::sum_fast, 3), per_sm = 4;
  } else if (what == "bulk") {
    fn = timed_1d(ch08::sum_bulk, 3);
  } else if (what == "tma") {
    fn = timed_tma(ch08::tma_plan().stages), per_sm = 4;
  } else {
    return;
  }
  const TimedArray t(per_sm);
  cml::Stream s;
  t.work(fn)(s);
  s.synchronize();
}

// ---- Step 1 -----------------------------------------------------------------------------

CML_INTEGRITY_CASE(08, "08_cp_async_ptx")

TEST_CASE("step 1: the tile copy lands every byte at every width and cache level, and zeros past the array's end",
          "[ch08][step1][correctness]") {
  for (const auto& kind : ch08::copy_kinds())
    for (const auto& k : ch08::copy_cases()) {
      std::string err;
      try {
        err = copy_error(kind, k.n, k.blocks);
      } catch (const cml::CudaError& e) {
        FAIL(kind.name
             << " (" << kind.kernel << ") on " << k.what << ": " << e.what()
             << " — the copy faulted: cp.async's destination is a .shared address of this block's shared "
                "memory (__cvta_generic_to_shared of the pointer), its source the global pointer as given "
                "(or __cvta_generic_to_global of it); a .shared address used as a pointer, or the two swapped, "
                "is out of any range (step 1; ./lab hint 08)");
      }
      const bool past_end = err.find("past the array") != std::string::npos;
      INFO(kind.name << " (" << kind.kernel << ") on " << k.what << ": " << err << " — "
                     << (past_end ? "cp_async reads src_bytes bytes and must zero-fill the rest of its Bytes: pass "
                                    "src_bytes as cp.async's src-size operand"
                                  : "the words did not land where they belong: cp_async copies Bytes bytes (its "
                                    "cp-size) from src to dst, its destination the .shared address of dst")
                     << " (step 1; ./lab hint 08)");
      REQUIRE(err.empty());
    }
}

TEST_CASE("step 1: the tile copy reads nothing past the array's end at any width, the array ending at an unmapped page",
          "[ch08][step1][correctness]") {
  for (const auto& kind : ch08::copy_kinds())
    for (const auto& k : cml::test::end_guard_cases()) {
      std::optional<cml::test::EndGuardedInput> in;
      try {
        in.emplace(k.n);
      } catch (const cml::Skip& e) {
        CML_SKIP(e.what());
      }
      const cml::GuardedBuffer<Word> out(std::max<std::size_t>(ch08::tile_count(k.n) * ch08::kTileWords, 1));
      cml::Stream s;
      std::vector<Word> got;
      std::string wrong;
      const auto fault = cml::test::cuda_fault([&] {
        ch08::copy_tiles(kind.bytes, kind.cache, in->words.data(), k.n, out.data(), k.blocks, s);
        wrong = out.read(got, "the last tile", s);
      });
      if (fault)
        FAIL(kind.name
             << " (" << kind.kernel << ") on " << k.what << " faulted: " << *fault
             << ". The array ends "
                "where the mapped memory ends, so a copy read past in[n - 1]: the piece where the array ends reads "
                "only the "
                "bytes that exist (cp.async's src-size), not its whole width, and a piece wholly past the end copies "
                "0 bytes (step 1; ./lab hint 08)");
      if (wrong.empty()) {
        got.resize(ch08::tile_count(k.n) * ch08::kTileWords);
        const auto r = ch08::check_copy(got, ch08::padded_copy(ch08::make_input(k.n)), k.n);
        if (!r.ok) wrong = r.describe();
      }
      INFO(kind.name << " (" << kind.kernel << ") on " << k.what << ", the array ending at an unmapped page: " << wrong
                     << " (step 1; ./lab hint 08)");
      REQUIRE(wrong.empty());
    }
}

TEST_CASE(
    "step 1: the source's experiment: a thread reads back its own copy without a barrier, another warp's after one",
    "[ch08][step1][correctness]") {
  struct Reading {
    ch08::Reverse how;
    int threads;
    const char* what;
  };
  for (const Reading& r : {Reading{ch08::Reverse::own, 32, "32 threads, each its own element"},
                           Reading{ch08::Reverse::neighbour_synced, 64, "64 threads, the other warp's element"}}) {
    const auto a = ch08::experiment_input(r.threads);
    cml::DeviceBuffer<int> a_d(a.size()), b_d(a.size());
    CUDA_CHECK(cudaMemcpy(a_d.data(), a.data(), a.size() * sizeof(int), cudaMemcpyHostToDevice));
    CUDA_CHECK(cudaMemset(b_d.data(), 0xFF, b_d.bytes()));
    ch08::reverse_warp(r.how, a_d.data(), b_d.data(), r.threads, nullptr);
    CUDA_CHECK(cudaDeviceSynchronize());
    std::vector<int> b(a.size());
    CUDA_CHECK(cudaMemcpy(b.data(), b_d.data(), b_d.bytes(), cudaMemcpyDeviceToHost));
    const auto want = ch08::experiment_expected(r.how, r.threads);
    const auto v = cml::compare_exact(b.data(), want.data(), b.size());
    INFO("reverse_kernel, " << r.what << ": " << v.describe()
                            << " — thread t copies a[threads - 1 - t] into element t "
                               "with cp_async<4, Cache::ca> (step 1; ./lab hint 08)");
    CHECK(v.ok);
  }
}

TEST_CASE(
    "step 1: cp_async compiles to one LDGSTS of the asked width and cache level, with src-size, from a shared address "
    "(SASS)",
    "[ch08][step1][mechanism]") {
  for (const auto& kind : ch08::copy_kinds()) {
    CML_KERNEL_SASS(f, kind.kernel);
    std::size_t zfill = 0;
    const auto forms = copy_forms(*f, zfill);
    {
      INFO(kind.kernel << " has no LDGSTS (cp.async): your cp_async still copies through registers, a load and a "
                          "store — write it as one inline PTX cp.async (step 1; ./lab hint 08)");
      REQUIRE(!forms.empty());
    }
    {
      const std::size_t ldg = cml::sass::count(*f, "LDG");
      INFO(kind.kernel
           << " has " << ldg
           << " LDG (global loads into registers) beside its copies: "
              "cp_async moves the bytes global -> shared with no register in between (step 1; ./lab hint 08)");
      CHECK(ldg == 0);
    }
    {
      INFO(kind.kernel
           << " (" << kind.name << ") compiles to " << forms_text(forms) << "; want " << kind.opcode
           << " only: the size is cp.async's cp-size operand (an immediate: Bytes), the cache level the instruction "
              "itself — cp.async.ca (L1 and L2) or cp.async.cg (L2 only: .BYPASS) (step 1; ./lab hint 08)");
      CHECK((forms.size() == 1 && forms.begin()->first == kind.opcode));
    }
    {
      INFO(kind.kernel
           << " has no LDGSTS...ZFILL: your cp_async ignores src_bytes — pass it as cp.async's src-size "
              "operand (after the cp-size), so the bytes past it land as zeros instead of being read from past the "
              "array (step 1; ./lab hint 08)");
      CHECK(zfill > 0);
    }
    {
      const bool generic = cml::sass::count_containing(*f, "SR_SWINHI") > 0;
      INFO(kind.kernel
           << " builds a generic pointer to shared memory (SASS reads SR_SWINHI, the high half of the "
              "shared window's generic addresses) and hands it to cp.async as its destination: the instruction wants "
              "a .shared address — __cvta_generic_to_shared(dst), 32 bits. (On this GPU the low half happens to be "
              "that address, so the copy may even work: PTX promises nothing of the kind.) (step 1; ./lab hint 08)");
      CHECK(!generic);
    }
  }
}

TEST_CASE("step 1: cp_async refuses a size its instruction does not take at compile time, in exercise.cu",
          "[ch08][step1][compile]") {
  const auto nvcc = cml::tools::find({"nvcc"}, cml::tools::search_dirs());
  if (!nvcc) CML_SKIP("nvcc is not on PATH, in $CUDA_HOME/bin or /usr/local/cuda/bin: the compile check cannot run");
  const std::string root = cml::test::checkout_root(__FILE__);
  const bool learner = cml::sass::self_executable().find("_learner") != std::string::npos;
  const std::string exercise = root + (learner ? "/chapters/" : "/solutions/") + "08_cp_async_ptx/exercise.cu";
  std::string dir = (std::filesystem::temp_directory_path() / "cml-ch08-probe-XXXXXX").string();
  REQUIRE(mkdtemp(dir.data()) != nullptr);
  std::ofstream(dir + "/probe.cu") << "#include \"" << exercise << "\"\n"
                                   << "__global__ void cml_probe_cg8(const ch08::Word* in) {\n"
                                   << "  __shared__ alignas(16) ch08::Word tile[8];\n"
                                   << "  ch08::cp_async<8, ch08::Cache::cg>(tile, in);  // .cg copies 16 bytes only\n"
                                   << "}\n"
                                   << "__global__ void cml_probe_ca32(const ch08::Word* in) {\n"
                                   << "  __shared__ alignas(16) ch08::Word tile[8];\n"
                                   << "  ch08::cp_async<32, ch08::Cache::ca>(tile, in);  // .ca copies 4, 8 or 16\n"
                                   << "}\n";
  const auto& d = cml::test::device();
  const auto out = cml::tools::run(
      cml::tools::quote(*nvcc) + " -std=c++17 -arch=sm_" + std::to_string(d.cc()) + " -cubin -o " +
      cml::tools::quote(dir + "/probe.cubin") + " -I" + cml::tools::quote(root + "/chapters/08_cp_async_ptx") + " -I" +
      cml::tools::quote(root + "/common") + " " + cml::tools::quote(dir + "/probe.cu") + " 2>&1");
  std::error_code ec;
  std::filesystem::remove_all(dir, ec);
  std::size_t refused = 0;
  for (std::size_t at = out.text.find("static assertion failed"); at != std::string::npos;
       at = out.text.find("static assertion failed", at + 1))
    ++refused;
  const std::string probe = "a probe that calls cp_async<8, Cache::cg> and cp_async<32, Cache::ca>";
  {
    INFO(probe << " compiled: your cp_async accepts sizes cp.async does not take — a static_assert on Bytes and C "
                  "must refuse them in exercise.cu, with a message naming the sizes (step 1; ./lab hint 08)");
    REQUIRE(out.status != 0);
  }
  {
    INFO(probe << " was refused by ptxas, not by your wrapper: the error points at a line of a temporary .ptx file, "
                  "far from the call — put a static_assert on Bytes and C in cp_async (step 1; ./lab hint 08)\n"
               << out.text.substr(0, 1200));
    REQUIRE(out.text.find("ptxas") == std::string::npos);
  }
  INFO(probe << ": want two static assertions failed in exercise.cu (one per call), each naming the sizes (\"16\"); "
                "nvcc said:\n"
             << out.text.substr(0, 1500));
  CHECK(refused == 2);
  CHECK(out.text.find("exercise.cu") != std::string::npos);
  CHECK(out.text.find("16") != std::string::npos);
}

TEST_CASE("step 1: the tile copy reads nothing past the array's end (memcheck)", "[ch08][step1][mechanism]") {
  CML_CHECK_SANITIZER("memcheck", "memcheck:copy",
                      "bad accesses by the tile copy of 5 tiles + 6 words: "
                      "the piece where the array ends must read only its src_bytes — cp.async's src-size operand (step "
                      "1; ./lab hint 08)");
}

TEST_CASE("step 1: the tile copy and the experiment read no shared word before its copy landed (racecheck)",
          "[ch08][step1][mechanism]") {
  CML_CHECK_SANITIZER("racecheck", "racecheck:copy",
                      "hazards in the tile copy: "
                      "cp.async is asynchronous: its bytes are there after the copying thread's wait and, for the "
                      "other threads, after a barrier that follows it (step 1; ./lab hint 08)");
  CML_CHECK_SANITIZER("racecheck", "racecheck:reverse",
                      "hazards in the experiment: "
                      "the same: a wait covers the calling thread's copies only (step 1; ./lab hint 08)");
}

// ---- Step 2 -----------------------------------------------------------------------------

TEST_CASE("step 2: sum_pipeline computes every block's sum at every stage count, tile counts not multiples of it",
          "[ch08][step2][correctness]") {
  check_pipeline(ch08::sum_pipeline, "sum_pipeline", step2_advice, "step 2", "ch08::sum_pipeline_kernel<");
}

TEST_CASE(
    "step 2: sum_pipeline reads nothing past the end of the array at any stage count, which ends at an unmapped page",
    "[ch08][step2][correctness]") {
  cml::test::check_reads_stop_at_end(ch08::sum_pipeline, "sum_pipeline", ch08::kMaxStages, plain_job,
                                     "a slot past the block's last tile copies nothing (t < tiles) but still commits, "
                                     "and the short last tile copies its count words only (step 2; ./lab hint 08)");
}

TEST_CASE("step 2: sum_pipeline only enqueues one kernel on its stream", "[ch08][step2][mechanism]") {
  cml::test::check_sum_enqueues_only(ch08::sum_pipeline, "sum_pipeline", 3, plain_job, "cp_async_ptx.cuh");
}

TEST_CASE("step 2: sum_pipeline launches job.blocks blocks of kThreads threads, whatever the tile count",
          "[ch08][step2][mechanism]") {
  CML_REQUIRE_TRACING();
  cml::test::check_sum_grid(ch08::sum_pipeline, "sum_pipeline", "sum_pipeline_kernel", 3, plain_job,
                            "cp_async_ptx.cuh");
}

TEST_CASE(
    "step 2: sum_pipeline_kernel<S> copies with cp.async, commits, and waits with cp.async.wait_group S - 1 (SASS)",
    "[ch08][step2][mechanism]") {
  for (int s = 1; s <= ch08::kMaxStages; ++s)
    check_pipeline_sass("ch08::sum_pipeline_kernel<" + std::to_string(s) + ">", s, "step 2");
  CML_KERNEL_SASS(f, "ch08::sum_pipeline_kernel<3>");
  cml::test::check_no_runtime_division(*f, "ch08::sum_pipeline_kernel<3>", "step 2; ./lab hint 08");
}

TEST_CASE("step 2: sum_pipeline_kernel reads no stage before every thread's copies landed (racecheck)",
          "[ch08][step2][mechanism]") {
  CML_CHECK_SANITIZER("racecheck", "racecheck:pipeline",
                      "hazards in sum_pipeline_kernel on 3 tiles + 6 words: "
                      "wait for the group (cp.async.wait_group), THEN the block barrier, then compute; a barrier at "
                      "the end of the tile before its stage is refilled (step 2; ./lab hint 08)");
}

TEST_CASE("step 2: 3 stages overlap copies with compute: kStagesOverOne of 1 stage", "[ch08][step2][perf]") {
  check_pipeline_speed(
      "sum_pipeline", timed_1d(ch08::sum_pipeline, 3), "itself at 1 stage", timed_1d(ch08::sum_pipeline, 1), 2,
      kStagesOverOne,
      ": with 3 stages the next 2 tiles' copies are in flight while the block computes — commit them before "
      "waiting, and wait for all but the newest 2 groups",
      "step 2");
}

// ---- Step 3 -----------------------------------------------------------------------------

TEST_CASE("step 3: sum_fast computes every block's sum at every stage count, n not a multiple of 4",
          "[ch08][step3][correctness]") {
  check_pipeline(ch08::sum_fast, "sum_fast", step3_advice, "step 3", "ch08::sum_fast_kernel<");
}

TEST_CASE("step 3: sum_fast reads nothing past the end of the array at any stage count, which ends at an unmapped page",
          "[ch08][step3][correctness]") {
  cml::test::check_reads_stop_at_end(ch08::sum_fast, "sum_fast", ch08::kMaxStages, plain_job,
                                     "each thread's copy brings only the bytes of its 16 that lie inside the "
                                     "tile (src-size, the rest zero-filled; 0 bytes wholly past it), and a slot "
                                     "past the block's last tile copies nothing (step 3; ./lab hint 08)");
}

TEST_CASE("step 3: sum_fast only enqueues one kernel on its stream", "[ch08][step3][mechanism]") {
  cml::test::check_sum_enqueues_only(ch08::sum_fast, "sum_fast", 3, plain_job, "cp_async_ptx.cuh");
}

TEST_CASE("step 3: sum_fast launches job.blocks blocks of kThreads threads, whatever the tile count",
          "[ch08][step3][mechanism]") {
  CML_REQUIRE_TRACING();
  cml::test::check_sum_grid(ch08::sum_fast, "sum_fast", "sum_fast_kernel", 3, plain_job, "cp_async_ptx.cuh");
}

TEST_CASE("step 3: sum_fast_kernel copies with 16-byte L1-bypassing copies only, the tail zero-filled (SASS)",
          "[ch08][step3][mechanism]") {
  check_pipeline_sass("ch08::sum_fast_kernel<3>", 3, "step 3");
  CML_KERNEL_SASS(f, "ch08::sum_fast_kernel<3>");
  std::size_t zfill = 0;
  const auto forms = copy_forms(*f, zfill);
  {
    INFO(
        "ch08::sum_fast_kernel<3> compiles to "
        << forms_text(forms)
        << "; want LDGSTS.E.BYPASS.128 only: every copy "
           "is one 16-byte cp.async.cg — the array's tail too, with src-size, not a branch to narrower copies (step 3; "
           "./lab hint 08)");
    CHECK((forms.size() == 1 && forms.begin()->first == "LDGSTS.E.BYPASS.128"));
  }
  INFO(
      "ch08::sum_fast_kernel<3> has no LDGSTS.E.BYPASS.128.ZFILL: its copies have no src-size, so where the array "
      "ends inside a thread's 16 bytes they either read past it or leave words out — give every copy the bytes "
      "that exist as its src-size (step 3; ./lab hint 08)");
  CHECK(zfill > 0);
}

TEST_CASE("step 3: sum_fast_kernel<3> keeps a block barrier after the wait and one before the refill (SASS)",
          "[ch08][step3][mechanism]") {
  CML_KERNEL_SASS(f, "ch08::sum_fast_kernel<3>");
  cml::test::check_tile_loop_barriers(*f, "ch08::sum_fast_kernel<3>", "step 3; ./lab hint 08");
  cml::test::check_no_runtime_division(*f, "ch08::sum_fast_kernel<3>", "step 3; ./lab hint 08");
}

TEST_CASE("step 3: sum_fast_kernel reads nothing past the end of the array (memcheck)", "[ch08][step3][mechanism]") {
  CML_CHECK_SANITIZER(
      "memcheck", "memcheck:fast",
      "bad accesses by sum_fast_kernel on 7 tiles + 3 words: "
      "a 16-byte copy of the array's last, partial piece reads past its end — give it the bytes that "
      "exist as src-size, and point copies that read nothing at a word that exists (step 3; ./lab hint 08)");
}

TEST_CASE("step 3: sum_fast_kernel reads no stage before its copies landed (racecheck)", "[ch08][step3][mechanism]") {
  CML_CHECK_SANITIZER("racecheck", "racecheck:fast",
                      "hazards in sum_fast_kernel: "
                      "the same order as step 2: commit, wait, barrier, compute, barrier — thread t copies its own 16 "
                      "bytes but computes on the piece thread t + 128 copied (step 3; ./lab hint 08)");
}

TEST_CASE("step 3: copy-bound, 16-byte copies beat step 2's 4-byte ones by kFastOverPipeline", "[ch08][step3][perf]") {
  check_pipeline_speed("sum_fast", timed_1d(ch08::sum_fast, 3), "sum_pipeline's speed", timed_1d(ch08::sum_pipeline, 3),
                       4, kFastOverPipeline, ": one 16-byte copy per thread per tile instead of four 4-byte ones",
                       "step 3");
}

// ---- Step 4 -----------------------------------------------------------------------------

TEST_CASE("step 4: sum_bulk computes every block's sum at every stage count, n not a multiple of 4 (sm_90)",
          "[ch08][step4][correctness]") {
  check_pipeline(ch08::sum_bulk, "sum_bulk", step4_advice, "step 4");
}

TEST_CASE(
    "step 4: sum_bulk reads nothing past the end of the array at any stage count, which ends at an unmapped page "
    "(sm_90)",
    "[ch08][step4][correctness]") {
  cml::test::check_reads_stop_at_end(ch08::sum_bulk, "sum_bulk", ch08::kMaxStages, plain_job,
                                     "the bulk copy moves the tile's bytes rounded down to 16, not a whole tile's "
                                     "4 KiB: the short last tile is shorter (tile_span), and its last 1-3 words go "
                                     "another way; unless a line 'wait_phase: ... gave up' came first: then a "
                                     "phase never completed and the wait trapped, and the result case above says "
                                     "why (step 4; ./lab hint 08)");
}

TEST_CASE("step 4: sum_bulk only enqueues one kernel on its stream", "[ch08][step4][mechanism]") {
  cml::test::check_sum_enqueues_only(ch08::sum_bulk, "sum_bulk", 3, plain_job, "cp_async_ptx.cuh");
}

TEST_CASE("step 4: sum_bulk launches job.blocks blocks of kThreads threads, whatever the tile count",
          "[ch08][step4][mechanism]") {
  CML_REQUIRE_TRACING();
  cml::test::check_sum_grid(ch08::sum_bulk, "sum_bulk", "sum_bulk_kernel", 3, plain_job, "cp_async_ptx.cuh");
}

TEST_CASE("step 4: sum_bulk_kernel moves each tile with a bulk copy completing on an mbarrier (SASS)",
          "[ch08][step4][mechanism]") {
  CML_KERNEL_SASS(f, "ch08::sum_bulk_kernel<3>");
  check_has_opcodes(*f, "ch08::sum_bulk_kernel<3>",
                    {{"UBLKCP.S.G",
                      " (cp.async.bulk global -> shared): the tiles do not move by bulk copies — one "
                      "thread issues one per tile with device.cuh's bulk_copy_to_shared"},
                     {"SYNCS.ARRIVE.TRANS64",
                      " (mbarrier.arrive.expect_tx): no phase expects the copies' bytes, so "
                      "nothing ties the barrier to the copy"},
                     {"SYNCS.PHASECHK",
                      " (mbarrier.try_wait.parity): nobody waits for a phase — call device.cuh's "
                      "wait_phase before computing on a stage"}},
                    "step 4");
}

// The PTX memory model's rule for a barrier that copies complete on: its init is an ordinary
// shared-memory write, which the asynchronous proxy (bulk and tensor copies) does not see in
// program order; a proxy fence after the init makes it visible. Today's GPUs work without it;
// the model does not promise it, so the PTX is checked (fence.mbarrier_init leaves no SASS).
namespace {
void check_init_fenced(const char* kernel, const char* step) {
  CML_KERNEL_PTX(e, kernel);
  INFO(kernel << ": its mbarrier.init is not followed by fence.proxy.async or fence.mbarrier_init — the bulk and "
                 "tensor copies that complete on the barrier go through the asynchronous proxy, which the PTX memory "
                 "model does not promise sees the init without a proxy fence (device.cuh: fence_proxy_async_shared or "
                 "fence_mbarrier_init, after the inits and before the __syncthreads) ("
              << step << "; ./lab hint 08)");
  CHECK(cml::sass::mbarrier_init_fenced(*e));
}
}  // namespace

TEST_CASE("step 4: sum_bulk_kernel fences its barrier inits for the asynchronous proxy (PTX)",
          "[ch08][step4][mechanism]") {
  check_init_fenced("ch08::sum_bulk_kernel<3>", "step 4");
}

// An mbarrier pipeline still needs two block barriers besides finish_block's two: one after
// thread 0's inits (no thread may wait on a barrier not yet initialised) and one before a
// stage is refilled (every warp done reading it). The mbarrier orders the copy's bytes, not
// the other warps' reads; and racecheck does not see a TMA copy's writes to shared memory.
// A kernel that frees each stage through a second, "empty" mbarrier instead (the consumers
// arrive on it: plain arrivals, .A1T0 in SASS; thread 0 waits on it) needs the first only.
namespace {
void check_mbarrier_block_barriers(const char* kernel, const char* step) {
  CML_KERNEL_SASS(f, kernel);
  const std::size_t bars = cml::sass::count(*f, "BAR.SYNC");
  const bool empty_barriers = cml::sass::count_containing(*f, ".A1T0") > 0;
  const std::size_t want = empty_barriers ? 3 : 4;
  INFO(kernel << " has " << bars << " block barriers (BAR.SYNC), finish_block's 2 among them; want " << want - 2
              << " more: one after the barrier inits, before any thread waits on them"
              << (empty_barriers ? ""
                                 : ", and one at the end of each stage, before thread 0 refills it — the "
                                   "mbarrier says the copy's bytes landed, not that the other warps finished "
                                   "reading the stage")
              << " (" << step << "; ./lab hint 08)");
  CHECK(bars >= want);
}
}  // namespace

TEST_CASE("step 4: sum_bulk_kernel keeps a block barrier after its inits and one before each refill (SASS)",
          "[ch08][step4][mechanism]") {
  check_mbarrier_block_barriers("ch08::sum_bulk_kernel<3>", "step 4");
}

TEST_CASE("step 4: sum_bulk_kernel reads nothing past the end of the array (memcheck)", "[ch08][step4][mechanism]") {
  CML_CHECK_SANITIZER("memcheck", "memcheck:bulk",
                      "bad accesses by sum_bulk_kernel on 7 tiles + 3 words: "
                      "the bulk copy moves the tile's bytes rounded down to 16; the last 1-3 words another way, "
                      "reading only those words (step 4; ./lab hint 08)");
}

TEST_CASE("step 4: sum_bulk_kernel reads no stage before its phase completed (racecheck)", "[ch08][step4][mechanism]") {
  CML_CHECK_SANITIZER(
      "racecheck", "racecheck:bulk",
      "hazards in sum_bulk_kernel: "
      "every thread waits for the stage's phase before it reads; thread 0 refills a stage only after "
      "the barrier that ends its last use; the tail's copy has landed before the arrival (step 4; ./lab hint 08)");
}

TEST_CASE("step 4: 3 stages of bulk copies overlap: kBulkStagesOverOne of 1 stage", "[ch08][step4][perf]") {
  check_pipeline_speed("sum_bulk", timed_1d(ch08::sum_bulk, 3), "itself at 1 stage", timed_1d(ch08::sum_bulk, 1), 2,
                       kBulkStagesOverOne, ": thread 0 starts tile k + stages - 1 before the block waits for tile k",
                       "step 4");
}

// ---- Step 5 -----------------------------------------------------------------------------

namespace {

// A matrix case on the device, its map encoded once at the plan's box: the driver's entry
// point is looked up on first use, so the tests that record calls warm it up first.
struct TmaMatrix {
  const ch08::MatrixCase& mc;
  const ch08::HostMatrix hm;
  const ch08::DeviceMatrix dm;
  explicit TmaMatrix(const ch08::MatrixCase& c) : mc(c), hm(ch08::make_matrix(c.rows, c.cols, c.pitch)), dm(hm) {
    (void)ch08::tensor_map_for(dm.view, ch08::tma_plan().box_rows);
  }
};

}  // namespace

TEST_CASE("step 5: sum_tma computes every block's sum over matrices with edge boxes and pitched rows (sm_90)",
          "[ch08][step5][correctness]") {
  check_cases(
      ch08::matrix_cases(),
      [](const ch08::MatrixCase& mc, int compute, int stages) { return box_sums(mc, compute, stages); },
      [](const ch08::MatrixCase& mc) {
        return mc.rows % static_cast<std::size_t>(ch08::tma_plan().box_rows) != 0 || mc.cols % ch08::kBoxCols != 0;
      },
      "sum_tma", step5_advice, "step 5");
}

TEST_CASE("step 5: sum_tma only enqueues one kernel on its stream", "[ch08][step5][mechanism]") {
  // The map is encoded on the host, the kernel is the one launch.
  for (const auto& mc : {ch08::matrix_cases()[5], ch08::matrix_cases()[3]}) {  // 3 x 8191 pitched; no rows
    const TmaMatrix m(mc);
    cml::DeviceBuffer<Word> partial(4);
    const auto job = ch08::make_matrix_job(m.dm.view, partial.data(), 4, 0, 3);
    CML_CHECK_ENQUEUE_ONLY(
        std::string("sum_tma on ") + mc.what, [&](cudaStream_t s) { ch08::sum_tma(job, s); }, 1,
        "cp_async_ptx.cuh: it only enqueues its kernel on `stream`");
  }
}

// The box the map was encoded with, read from the driver call (the API recorder sees
// cuTensorMapEncodeTiled through the runtime's entry point too): what one wait brings.
TEST_CASE("step 5: sum_tma brings kMinBoxBytes or more into a stage per barrier wait", "[ch08][step5][mechanism]") {
  CML_REQUIRE_TRACING();
  const TmaMatrix m(ch08::matrix_cases()[1]);  // 128 x 1024
  cml::DeviceBuffer<Word> partial(4);
  const auto job = ch08::make_matrix_job(m.dm.view, partial.data(), 4, 0, 3);
  cml::Stream s;
  const auto e = cml::test::watch_enqueue({s.get()}, [&] { ch08::sum_tma(job, s); });
  CML_REQUIRE_API_OK(e.calls);
  {
    INFO("sum_tma on " << m.mc.what << ": " << e.error() << " (step 5)");
    REQUIRE(e.threw.empty());
  }
  const auto encoded = e.calls.named("cuTensorMapEncodeTiled");
  {
    INFO(
        "sum_tma encoded no tensor map during the call: encode the job's matrix with tensor_map_for in sum_tma "
        "(step 5; ./lab hint 08)");
    REQUIRE(!encoded.empty());
  }
  const auto& box = encoded.back();
  INFO("sum_tma's boxes are "
       << box.box[1] << " rows of " << box.box[0] << " words, " << box.bytes / 1024.0
       << " KiB, and each is one barrier wait: a wait costs its block a fixed time whatever it brings, so small boxes "
          "leave memory idle (on the H200, 4 KiB boxes ran 0.78-0.80 of the read-only kernel and 8 KiB 0.95; docs/08). "
          "Choose a tma_plan whose box brings "
       << kMinBoxBytes / 1024
       << " KiB or more, in stages that still fit "
          "4 blocks per SM (step 5; ./lab hint 08)");
  CHECK(box.bytes >= kMinBoxBytes);
}

// Fewer blocks than boxes, and more (128 x 1024 is 4 box columns by 128 / box_rows bands).
TEST_CASE("step 5: sum_tma launches job.blocks blocks of kThreads threads, whatever the box count",
          "[ch08][step5][mechanism]") {
  CML_REQUIRE_TRACING();
  const TmaMatrix m(ch08::matrix_cases()[1]);  // 128 x 1024
  const std::size_t boxes = ch08::box_count(m.dm.view, ch08::tma_plan().box_rows);
  for (const int blocks : {3, 20}) {
    CAPTURE(blocks);
    cml::DeviceBuffer<Word> partial(std::max<std::size_t>(64, boxes));  // room for a wrong grid's partials too
    const auto job = ch08::make_matrix_job(m.dm.view, partial.data(), blocks, 0, 3);
    const cml::test::Launched l =
        cml::test::launched_kernel("sum_tma_kernel", [&](cudaStream_t s) { ch08::sum_tma(job, s); });
    {
      INFO("sum_tma with job.blocks = " << blocks << ": " << l.error << " (step 5)");
      REQUIRE(l.error.empty());
    }
    const std::string err = cml::test::sum_grid_error(l.kernel, blocks, boxes, "box");
    INFO("sum_tma on " << m.mc.what << ": " << err
                       << " (cp_async_ptx.cuh: every function launches job.blocks blocks "
                          "of kThreads threads; step 5)");
    CHECK(err.empty());
  }
}

TEST_CASE("step 5: sum_tma_kernel loads each box with one 2D TMA copy completing on an mbarrier (SASS)",
          "[ch08][step5][mechanism]") {
  CML_KERNEL_SASS(f, "ch08::sum_tma_kernel<3>");
  check_has_opcodes(*f, "ch08::sum_tma_kernel<3>",
                    {{"UTMALDG.2D",
                      " (cp.async.bulk.tensor.2d): the boxes do not come through the tensor memory "
                      "accelerator — device.cuh's tensor_load_2d with &map"},
                     {"SYNCS.ARRIVE.TRANS64", " (mbarrier.arrive.expect_tx): no phase expects the box's bytes"},
                     {"SYNCS.PHASECHK", ": nobody waits for a phase"}},
                    "step 5");
}

TEST_CASE("step 5: sum_tma_kernel fences its barrier inits for the asynchronous proxy (PTX)",
          "[ch08][step5][mechanism]") {
  check_init_fenced("ch08::sum_tma_kernel<3>", "step 5");
}

TEST_CASE("step 5: sum_tma_kernel keeps a block barrier after its inits and one before each refill (SASS)",
          "[ch08][step5][mechanism]") {
  check_mbarrier_block_barriers("ch08::sum_tma_kernel<3>", "step 5");
}

TEST_CASE("step 5: sum_tma_kernel reads no stage before its phase completed (racecheck)", "[ch08][step5][mechanism]") {
  CML_CHECK_SANITIZER(
      "racecheck", "racecheck:tma",
      "hazards in sum_tma_kernel on a 9 x 257 matrix: "
      "the same order as step 4: wait for the phase, compute, barrier before the refill (step 5; ./lab hint 08)");
}

TEST_CASE("step 5: tma_plan is a box TMA can load and stage counts that fit", "[ch08][step5][correctness]") {
  const ch08::TmaPlan plan = ch08::tma_plan();
  INFO("tma_plan() = {" << plan.box_rows << ", " << plan.stages << "}: box rows 1 to " << ch08::kMaxBoxRows
                        << ", stages 1 to " << ch08::kMaxStages << " (step 5; ./lab hint 08)");
  REQUIRE((plan.box_rows >= 1 && plan.box_rows <= ch08::kMaxBoxRows && plan.stages >= 1 &&
           plan.stages <= ch08::kMaxStages));
  // Every stage count with that box must launch, on every GPU step 5 runs on: sm_120 parts
  // (GeForce RTX 50) give a block 99 KiB of shared memory where an H100 gives 227.
  constexpr int kSmallestOptin = 99 * 1024;
  int optin = 0;
  CUDA_CHECK(cudaDeviceGetAttribute(&optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, cml::test::device().index));
  const std::size_t limit = static_cast<std::size_t>(std::min(optin, kSmallestOptin));
  const std::size_t box = static_cast<std::size_t>(plan.box_rows) * ch08::kBoxCols * sizeof(Word);
  INFO("with boxes of " << plan.box_rows << " rows (" << box / 1024 << " KiB), " << ch08::kMaxStages << " stages take "
                        << ch08::kMaxStages * box / 1024 << " KiB, more than the " << limit / 1024
                        << " KiB a block may have on an sm_120 GPU (this one allows " << optin / 1024
                        << "): sum_tma must run at every stage count (cp_async_ptx.cuh) — a smaller box (step 5; "
                           "./lab hint 08)");
  CHECK(ch08::kMaxStages * box <= limit);
}

TEST_CASE("step 5: tensor_map_for refuses what TMA cannot take, with the rule, and takes it pitched",
          "[ch08][step5][correctness]") {
  cml::DeviceBuffer<Word> words(16 * 8192);
  ch08::Matrix m;
  m.data = words.data();
  m.rows = 16;
  m.cols = m.pitch = 8191;
  {
    INFO(
        "tensor_map_for accepted rows 32764 bytes apart: TMA needs the row stride to be a multiple of 16 bytes — "
        "check it and throw std::invalid_argument saying so, before the driver sees it (step 5; ./lab hint 08)");
    CHECK_THROWS_AS(ch08::tensor_map_for(m, 4), std::invalid_argument);
  }
  {
    INFO("tensor_map_for accepted boxes of 0 and 257 rows: a TMA box has 1 to 256 rows (step 5; ./lab hint 08)");
    m.pitch = 8192;
    CHECK_THROWS_AS(ch08::tensor_map_for(m, 0), std::invalid_argument);
    CHECK_THROWS_AS(ch08::tensor_map_for(m, ch08::kMaxBoxRows + 1), std::invalid_argument);
  }
  {
    INFO(
        "tensor_map_for accepted a matrix starting 4 bytes past a 16-byte boundary: TMA needs its global address "
        "16-byte aligned — check it and throw std::invalid_argument saying so (cp_async_ptx.cuh; step 5)");
    ch08::Matrix shifted = m;
    shifted.data = words.data() + 1;
    shifted.rows = 15;  // the shifted matrix stays inside the buffer
    CHECK_THROWS_AS(ch08::tensor_map_for(shifted, 4), std::invalid_argument);
  }
  const CUtensorMap map = ch08::tensor_map_for(m, ch08::tma_plan().box_rows);
  const auto* bytes = reinterpret_cast<const unsigned char*>(&map);
  INFO(
      "tensor_map_for returned an all-zero map for a 16 x 8191 matrix pitched to 8192: encode it with the driver's "
      "cuTensorMapEncodeTiled (step 5; ./lab hint 08)");
  CHECK(std::any_of(bytes, bytes + sizeof(map), [](unsigned char b) { return b != 0; }));
}

TEST_CASE("step 5: copy-bound, the TMA pipeline at tma_plan reaches kTmaOverReadOnly of the read-only kernel",
          "[ch08][step5][perf]") {
  const ch08::TmaPlan plan = ch08::tma_plan();
  const auto st = time_all({timed_1d(ch08::sum_read_only, 1), timed_tma(plan.stages)}, 4);
  cml::test::check_bar(st[0], st[1], kTmaOverReadOnly,
                       "sum_tma with boxes of " + std::to_string(plan.box_rows) + " rows at " +
                           std::to_string(plan.stages) + " stages, 4 blocks per SM, no compute",
                       "the read-only kernel",
                       ": each box costs its block a fixed time whatever it brings — boxes of 4 rows (4 KiB) stay "
                       "near 0.8; bring more per wait, in stages that fit 4 blocks per SM (step 5; ./lab hint 08)");
}

// ---- Both sides of the bars, for the maintainer ------------------------------------------

// Five runs of each bar's correct side with this build's kernels. Run on the solution's
// build for the correct sides, and on a mutant's build (tools/mutants.py builds each in
// build-mutants/build) for the mistake's side. Not run by ./lab check.
TEST_CASE("measure both sides of the speed bars", "[ch08][.measure]") {
  const auto& d = cml::test::device();
  std::printf("device %s (sm_%d)\n", d.name.c_str(), d.cc());
  for (int run = 0; run < 5; ++run) {
    auto st = time_all({timed_1d(ch08::sum_pipeline, 1), timed_1d(ch08::sum_pipeline, 3)}, 2);
    std::printf("run %d  kStagesOverOne     pipeline x3 / x1 at 2 blocks/SM: %.3f\n", run,
                st[0].median_ms / st[1].median_ms);
    st = time_all({timed_1d(ch08::sum_read_only, 1), timed_1d(ch08::sum_fast, 3), timed_1d(ch08::sum_pipeline, 3)}, 4);
    std::printf(
        "run %d  kFastOverPipeline  fast x3 / pipeline x3 at 4 blocks/SM: %.3f   (of read-only: fast %.3f, "
        "4-byte pipeline %.3f)\n",
        run, st[2].median_ms / st[1].median_ms, st[0].median_ms / st[1].median_ms, st[0].median_ms / st[2].median_ms);
    if (!cml::needs::missing_for("08", 4, d).empty()) continue;
    st = time_all({timed_1d(ch08::sum_bulk, 1), timed_1d(ch08::sum_bulk, 3)}, 2);
    std::printf("run %d  kBulkStagesOverOne bulk x3 / x1 at 2 blocks/SM: %.3f\n", run,
                st[0].median_ms / st[1].median_ms);
    const ch08::TmaPlan plan = ch08::tma_plan();
    st = time_all({timed_1d(ch08::sum_read_only, 1), timed_1d(ch08::sum_bulk, 3), timed_tma(plan.stages), timed_tma(1)},
                  4);
    std::printf(
        "run %d  kTmaOverReadOnly   of read-only at 4 blocks/SM: tma {%d rows, x%d} %.3f   (tma x1 %.3f, "
        "bulk x3 %.3f)\n",
        run, plan.box_rows, plan.stages, st[0].median_ms / st[2].median_ms, st[0].median_ms / st[3].median_ms,
        st[0].median_ms / st[1].median_ms);
  }
  std::fflush(stdout);
  SUCCEED();
}
