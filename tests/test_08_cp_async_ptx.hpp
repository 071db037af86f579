// Chapter 08's test helpers (tests/test_08_cp_async_ptx.cpp includes this, and nothing else
// does): the results each step is judged on, against the CPU, and the SASS each step's
// mechanism is read from. The cases and the speed bars are in the .cpp.
#pragma once

#include "cp_async_ptx.cuh"
#include "harness.hpp"

#include "api_calls.hpp"
#include "enqueue_only.hpp"
#include "gpu.hpp"
#include "integrity.hpp"
#include "kernel_sass.hpp"
#include "sanitizer_target.hpp"
#include "speed_bar.hpp"
#include "stream_race.hpp"
#include "target_case.hpp"
#include "tile_sum_checks.hpp"

#include "cml/buffers.hpp"
#include "cml/errors.hpp"
#include "cml/guarded.hpp"
#include "cml/sass.hpp"
#include "cml/stream.hpp"
#include "cml/timing.hpp"
#include "cml/tools.hpp"

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <optional>
#include <regex>
#include <stdexcept>
#include <string>
#include <vector>

namespace {

using ch08::Job;
using ch08::SumFn;
using ch08::Word;

constexpr unsigned long long kWaitLimitNs = 10'000'000'000ull;  // a phase given up on after 10 s

// ---- Results ----------------------------------------------------------------------------

// The words an input of n words is allocated with: whole 16-byte pieces, the padding
// poisoned (upload_input), not exactly n. compute-sanitizer memcheck (CUDA 13.0, seen on
// the H100 and the H200) reports a zero-filling cp.async of 16 bytes with a src-size of
// 4-12 as a 16-byte read past the array, though the PTX ISA has it read src-size bytes
// only (and an 8-byte one on a 4-byte array likewise). A read past the rounded end, or of a
// piece with nothing in it, is still reported; a copy that ignores src-size brings the
// poison into the sums and the tail, which the results tests see.
std::size_t input_words(std::size_t n) { return n == 0 ? 4 : (n + 3) / 4 * 4; }
void upload_input(cml::DeviceBuffer<Word>& in, const std::vector<Word>& host) {
  if (in.size() > host.size()) CUDA_CHECK(cudaMemset(in.data(), 0xA5, in.bytes()));  // padding: not zeros
  if (!host.empty()) CUDA_CHECK(cudaMemcpy(in.data(), host.data(), host.size() * sizeof(Word), cudaMemcpyHostToDevice));
  CUDA_CHECK(cudaDeviceSynchronize());  // lands before a kernel on a non-blocking stream
}

// "" when copy_tiles of `kind` left in[0..n) and then zeros to the end of the last tile in
// `out`, and nothing after it. The input is allocated as input_words says.
std::string copy_error(const ch08::CopyKind& kind, std::size_t n, int blocks) {
  const auto host = ch08::make_input(n);
  cml::DeviceBuffer<Word> in(input_words(n));
  const cml::GuardedBuffer<Word> out(ch08::tile_count(n) * ch08::kTileWords);
  upload_input(in, host);
  cml::Stream s;
  ch08::scrub_shared_memory(s);  // a read before the copy landed finds garbage, not the last run's tile
  ch08::copy_tiles(kind.bytes, kind.cache, in.data(), n, out.data(), blocks, s);
  const auto want = ch08::padded_copy(host);
  return cml::test::judged_on_stream("copy_tiles", [&] {
    std::vector<Word> got;
    if (std::string past = out.read(got, "the last tile", s); !past.empty()) return past;
    const auto r = ch08::check_copy(got, want, n);
    return r.ok ? std::string() : r.describe();
  });
}

// What a sum's run gave: "" or the wrong sums; "" or why a wait gave up.
struct SumOutcome {
  std::string wrong;
  std::string stalled;
};

// Runs `launch` (one kernel writing `blocks` partials) with a fresh report and checks the
// partials against `want`, and that nothing was written past them.
template <class Launch, class Check>
SumOutcome run_and_check(const std::string& function, Launch&& launch, int blocks, Check&& check) {
  const cml::GuardedBuffer<Word> partial(static_cast<std::size_t>(blocks));
  ch08::DeviceReport report(kWaitLimitNs);
  cml::Stream s;
  ch08::scrub_shared_memory(s);  // a read before the copy landed finds garbage, not the last run's tile
  launch(partial.data(), report.get(), static_cast<cudaStream_t>(s));
  SumOutcome o;
  o.wrong = cml::test::judged_on_stream(function, [&] {
    std::vector<Word> got;
    if (std::string past = partial.read(got, "the grid's partials", s); !past.empty()) return past;
    const auto r = check(got);
    return r.ok ? std::string() : r.describe();
  });
  o.stalled = ch08::describe(report.read());
  return o;
}

// One run of a 1D pipeline on n words of word_at(i) (allocated as input_words says).
SumOutcome sums(SumFn fn, const char* function, std::size_t n, int blocks, int compute, int stages) {
  const auto host = ch08::make_input(n);
  cml::DeviceBuffer<Word> in(input_words(n));
  upload_input(in, host);
  const auto want = ch08::reference_partials(host, blocks, compute);
  return run_and_check(
      function,
      [&](Word* partial, ch08::Report* report, cudaStream_t s) {
        fn(ch08::make_job(in.data(), n, partial, blocks, compute, stages, report), s);
      },
      blocks, [&](const std::vector<Word>& got) { return ch08::check_partials(got, want, n); });
}

// One run of sum_tma on a matrix case.
SumOutcome box_sums(const ch08::MatrixCase& mc, int compute, int stages) {
  const ch08::HostMatrix hm = ch08::make_matrix(mc.rows, mc.cols, mc.pitch);
  const ch08::DeviceMatrix dm(hm);
  const int box_rows = ch08::tma_plan().box_rows;
  const auto want = ch08::reference_box_partials(hm, mc.blocks, compute, box_rows);
  return run_and_check(
      "sum_tma",
      [&](Word* partial, ch08::Report* report, cudaStream_t s) {
        ch08::sum_tma(ch08::make_matrix_job(dm.view, partial, mc.blocks, compute, stages, report), s);
      },
      mc.blocks, [&](const std::vector<Word>& got) { return ch08::check_box_partials(got, want, hm, box_rows); });
}

// The counts of a kernel's cp.async.wait_group: N of each DEPBAR.LE SB0, N.
std::vector<int> wait_counts(const cml::sass::Function& f) {
  static const std::regex depbar(R"(DEPBAR\.LE\s+SB0\s*,\s*0x([0-9a-fA-F]+))");
  std::vector<int> out;
  std::smatch m;
  for (const auto& ins : f.instructions)
    if (std::regex_search(ins, m, depbar)) out.push_back(std::stoi(m[1].str(), nullptr, 16));
  return out;
}

// What to look at when a step's sums fail, from what failed: `ragged` (the array ends
// inside a 16-byte piece), whether arrays ending on a piece passed, the stage count and
// whether lower stage counts passed, a stalled wait, a CUDA error.
struct Failure {
  std::size_t n = 0;
  bool ragged = false;
  bool round_passed = false;
  int stages = 1;
  bool fewer_stages_passed = false;
  bool stalled = false;
  bool crashed = false;
  // Steps 2 and 3: whether the failing kernel's SASS waits with cp.async.wait_group
  // stages - 1, the right count (nothing where the SASS could not be read).
  std::optional<bool> wait_right;
};

// Whether the kernel `prefix` + stages + ">" waits with cp.async.wait_group stages - 1 at
// most (DEPBAR.LE SB0, stages - 1); nothing where cuobjdump is missing or the kernel is not there.
std::optional<bool> waits_right(const std::string& prefix, int stages) {
  try {
    const auto f = cml::test::kernel_sass(prefix + std::to_string(stages) + ">");
    if (!f) return std::nullopt;
    const auto waits = wait_counts(*f);
    if (waits.empty()) return false;
    return *std::max_element(waits.begin(), waits.end()) == stages - 1;
  } catch (const cml::Skip&) {
    return std::nullopt;
  }
}

std::string step2_advice(const Failure& f) {
  if (f.stages == 3 && f.fewer_stages_passed)
    return "stages 1 and 2 pass and 3 fails: the stage index wraps wrongly — the k-th tile lives in buffer k % stages "
           "for any stages, not k & (stages - 1), the same index to fill and to read";
  // A wait count that is right (the SASS says so) is not what to change: the groups it
  // counts, or the stage the next fetch writes, are.
  if (f.wait_right == true)
    return "the kernel waits with cp.async.wait_group " + std::to_string(f.stages - 1) + ", the right count for " +
           std::to_string(f.stages) + " stages (SASS: DEPBAR.LE SB0, " + std::to_string(f.stages - 1) +
           "), so "
           "either tile k's copies were not among the groups it waited for, or they landed in a stage still being "
           "read. Commit one group per tile slot, in every thread, also for the slots past the block's last tile "
           "(else \"all but the newest stages - 1\" counts other groups at the end); and the fetch at the top of "
           "iteration k fills stage (k + stages - 1) % stages, the one tile k - 1 used and the barrier after its "
           "compute freed — never stage k % stages, which this iteration computes on (the index that fills counts "
           "the tiles fetched, not the loop's k)";
  return "a thread read a tile before all of it landed: with one commit group per tile slot, in every thread even "
         "when it has nothing to copy, and stages - 1 tiles committed ahead, cp.async.wait_group stages - 1 leaves "
         "exactly the tiles not needed yet in flight (more lets tile k's copies still be pending); it covers this "
         "thread's copies only, so a __syncthreads after it makes the other threads' visible";
}

std::string step3_advice(const Failure& f) {
  if (f.ragged && f.round_passed)
    return "arrays ending on a 16-byte piece pass, ragged ones fail: the tail — the piece where the array ends copies "
           "4 x (count - 4t) bytes and zero-fills the rest (cp.async's src-size), pieces wholly past it copy 0 bytes; "
           "compute_tile counts only the tile's count words";
  return step2_advice(f);
}

std::string step4_advice(const Failure& f) {
  if (f.crashed)
    return "the kernel faulted: a bulk copy, or an mbarrier used out of turn. cp.async.bulk moves a multiple of 16 "
           "bytes between 16-byte aligned addresses (the tile's bytes rounded down to 16; the array's last 1-3 words "
           "another way), to a .shared destination, completing on a .shared mbarrier; and a stage's barrier is "
           "armed again only after its phase completed — wait for the parity of this use of the barrier, "
           "(k / stages) & 1 (seen on the H100: a parity that never flips faults here, it does not hang)";
  if (f.stalled)
    return "the phase a thread waited for never completed: it waits for another use's parity (the k-th tile is its "
           "barrier's (k / stages)-th use: wait for (k / stages) & 1), or it expects more bytes than its copies "
           "deliver (a bulk copy delivers what it moves, a multiple of 16 bytes: the tile's bytes rounded down to 16 "
           "— the tail's words are not among them), or more arrivals than are made (the count given to mbarrier_init), "
           "or nobody arrived (arrive.expect_tx arrives; thread 0 calls it for every tile, even one with nothing "
           "to bulk-copy)";
  if (f.ragged && f.round_passed)
    return "arrays ending on a 16-byte piece pass, ragged ones fail: bulk copies move a multiple of 16 bytes, so the "
           "array's last 1-3 words are not in the bulk copy — copy them another way (step 3's zero-filled cp.async, "
           "waited for) before the arrival that publishes the tile, and expect-tx only the bulk copy's bytes";
  return "the phase completed before the tile landed, or was another use's: the k-th tile uses its stage's barrier "
         "for the (k / stages)-th time, so wait for the parity of this use of the barrier, (k / stages) & 1 — a "
         "parity that never flips returns at once from the second use on; expect-tx exactly the bytes the bulk copy "
         "delivers; initialise each barrier once, with a proxy fence and a __syncthreads before anyone uses it";
}

std::string step5_advice(const Failure& f) {
  if (f.crashed)
    return "a launch refused with an invalid argument asked for more dynamic shared memory than a block gets by "
           "default: past 48 KiB (stages x box bytes) the kernel must be allowed more first "
           "(cudaFuncAttributeMaxDynamicSharedMemorySize); a fault in the tensor copy: the map is the "
           "__grid_constant__ kernel parameter, passed by its address (&map), the destination 128-byte aligned "
           "shared memory, the barrier a .shared mbarrier";
  if (f.stalled)
    return "the phase a thread waited for never completed: a TMA load completes the whole box's bytes (box rows x "
           "kBoxCols x 4), edge or not — the words outside the matrix are written as zeros and counted — so expect "
           "the whole box; and arrive once per phase (the count given to mbarrier_init)";
  if (f.ragged && f.round_passed)
    return "matrices whose boxes lie inside pass, those with edge boxes fail: at an edge the TMA unit writes zeros "
           "for the words outside the matrix and still completes the whole box's bytes (expect the whole box), and "
           "only the words inside count (compute_box with box_span)";
  return "the box's words are not where compute_box reads them, or not yet: the tensor copy takes the box's first "
         "column then its first row (box_span's x, y, in elements), column first; the map's box and the kernel's "
         "must have the same rows (tma_plan's); then step 4's rules — " +
         step4_advice(f);
}

std::size_t words_of(const ch08::Case& k) { return k.n; }
std::size_t words_of(const ch08::MatrixCase& k) { return k.rows * k.cols; }

// Under the racecheck setup, cases above this many words are left to the plain run and to
// memcheck: racecheck's cost grows with every shared-memory access (the waits' spins
// included), and the whole [correctness] run with larger cases did not finish in minutes
// (docs/08_cp_async_ptx.md, "How the tests see what the sums hide"). The kept cases still
// hold the edges a race depends on: ragged tails, edge boxes, pitched rows, several blocks,
// every stage count, empty inputs.
constexpr std::size_t kRacecheckMaxWords = std::size_t{1} << 18;

// Under racecheck, compute 3 (more arithmetic per word, the same shared-memory accesses and
// barriers) runs at the deepest pipeline only, where slower consumers most let the copies
// run ahead; compute 0 keeps every stage count. With every pair the chapter alone took about
// half of the setup's 10 minutes (times in docs/08_cp_async_ptx.md).
bool racecheck_skips(bool racecheck, int compute, int stages) {
  return racecheck && compute != 0 && stages != ch08::kMaxStages;
}

// Checks `run(case, compute, stages)` on every case at compute 0 and 3 and every stage
// count, cases that end on a 16-byte piece (or whose boxes lie inside) first; stops at the
// first failure, which it reports with the step's advice. Since it stops there, a ragged
// case that fails comes after every round one passed, and stage counts below the failing
// one passed on its case.
template <class CaseT, class Run, class Ragged>
void check_cases(const std::vector<CaseT>& cases, Run&& run, Ragged&& ragged, const char* what,
                 std::string (*advice)(const Failure&), const char* step, const char* kernel_prefix = nullptr) {
  const bool racecheck = cml::test::whole_run_sanitizer() == "racecheck";
  std::vector<const CaseT*> order;
  for (const bool edges : {false, true})
    for (const auto& k : cases) {
      if (ragged(k) != edges) continue;
      if (racecheck && words_of(k) > kRacecheckMaxWords) {
        std::printf("%s on %s: left out under racecheck (over %zu words)\n", what, k.what, kRacecheckMaxWords);
        continue;
      }
      order.push_back(&k);
    }
  if (racecheck) std::printf("%s: compute 3 at %d stages only under racecheck\n", what, ch08::kMaxStages);
  for (const CaseT* k : order)
    for (int stages = 1; stages <= ch08::kMaxStages; ++stages)
      for (const int compute : {0, 3}) {
        if (racecheck_skips(racecheck, compute, stages)) continue;
        Failure f;
        f.ragged = f.round_passed = ragged(*k);
        f.stages = stages;
        f.fewer_stages_passed = stages > 1;
        SumOutcome o;
        try {
          o = run(*k, compute, stages);
        } catch (const cml::CudaError& e) {
          f.crashed = true;
          FAIL(what << " on " << k->what << ", stages " << stages << ": " << e.what() << " — " << advice(f) << " ("
                    << step << "; ./lab hint 08)");
        }
        if (o.wrong.empty() && o.stalled.empty()) continue;
        if (o.wrong == cml::test::ran_elsewhere(what))
          FAIL(what << " on " << k->what << ", compute " << compute << ", stages " << stages << ": " << o.wrong << " ("
                    << step << "; ./lab hint 08)");
        f.stalled = !o.stalled.empty();
        if (kernel_prefix != nullptr) f.wait_right = waits_right(kernel_prefix, stages);
        FAIL(what << " on " << k->what << ", compute " << compute << ", stages " << stages << ": "
                  << (f.stalled ? o.stalled : o.wrong) << " — " << advice(f) << " (" << step << "; ./lab hint 08)");
      }
}

// `kernel_prefix` ("ch08::sum_pipeline_kernel<"): the kernel whose SASS wait count the
// advice reads (steps 2 and 3), or null.
void check_1d_sums(SumFn fn, const char* name, std::string (*advice)(const Failure&), const char* step,
                   const char* kernel_prefix) {
  check_cases(
      ch08::sum_cases(),
      [&](const ch08::Case& k, int compute, int stages) { return sums(fn, name, k.n, k.blocks, compute, stages); },
      [](const ch08::Case& k) { return k.n % 4 != 0; }, name, advice, step, kernel_prefix);
}

// The chapter's job without a wait report: what the shared launcher checks build
// (tile_sum_checks.hpp).
Job plain_job(const Word* in, std::size_t n, Word* partial, int blocks, int compute, int stages) {
  return ch08::make_job(in, n, partial, blocks, compute, stages);
}

// What the header promises of every 1D pipeline (steps 2-4): its sums and the stage counts
// it refuses (and, in a [mechanism] case, check_sum_enqueues_only: one kernel on its stream).
void check_pipeline(SumFn fn, const char* name, std::string (*advice)(const Failure&), const char* step,
                    const char* kernel_prefix = nullptr) {
  check_1d_sums(fn, name, advice, step, kernel_prefix);
  cml::test::check_stage_range(fn, name, plain_job, "cp_async_ptx.cuh");
}

// ---- SASS -------------------------------------------------------------------------------

// The asynchronous copies of a kernel by form, .ZFILL set aside: {"LDGSTS.E.128": 3, ...}.
std::map<std::string, std::size_t> copy_forms(const cml::sass::Function& f, std::size_t& zfill) {
  std::map<std::string, std::size_t> forms;
  zfill = 0;
  for (std::string o : f.opcodes) {
    if (o.rfind("LDGSTS", 0) != 0) continue;
    const std::size_t z = o.find(".ZFILL");
    if (z != std::string::npos) {
      ++zfill;
      o.erase(z, 6);
    }
    ++forms[o];
  }
  return forms;
}

std::string forms_text(const std::map<std::string, std::size_t>& forms) {
  std::string s;
  for (const auto& [form, count] : forms) s += (s.empty() ? "" : ", ") + std::to_string(count) + " " + form;
  return s.empty() ? "no LDGSTS" : s;
}

// Each opcode somewhere in the kernel's SASS, or the failure "<kernel> has no <opcode><why>
// (<step>; ./lab hint 08)": the instructions a step's mechanism cannot do without.
void check_has_opcodes(const cml::sass::Function& f, const std::string& kernel,
                       const std::vector<std::pair<const char*, const char*>>& opcodes, const char* step) {
  for (const auto& [opcode, why] : opcodes) {
    INFO(kernel << " has no " << opcode << why << " (" << step << "; ./lab hint 08)");
    CHECK(cml::sass::count(f, opcode) > 0);
  }
}

// The checks every kernel of steps 2-3 shares: asynchronous copies, none through registers,
// groups committed, and the wait count of a pipeline of `stages`.
void check_pipeline_sass(const std::string& kernel, int stages, const char* step) {
  CML_KERNEL_SASS(f, kernel);
  std::size_t zfill = 0;
  const auto forms = copy_forms(*f, zfill);
  {
    INFO(kernel << " has no LDGSTS (cp.async): its tiles still pass through registers, as in sum_through_registers — "
                   "copy them with your cp_async ("
                << step << "; ./lab hint 08)");
    REQUIRE(!forms.empty());
  }
  {
    const std::size_t ldg = cml::sass::count(*f, "LDG");  // LDG.*, not LDGSTS or LDGDEPBAR
    INFO(kernel << " has " << ldg
                << " LDG (global loads into registers) beside its asynchronous copies: "
                   "every word must reach shared memory by cp.async, none through a register ("
                << step << "; ./lab hint 08)");
    CHECK(ldg == 0);
  }
  {
    INFO(kernel << " never commits a group (no LDGDEPBAR: cp.async.commit_group): nothing can be waited for by "
                   "group — commit once per tile slot, in every thread ("
                << step << "; ./lab hint 08)");
    CHECK(cml::sass::count(*f, "LDGDEPBAR") > 0);
  }
  const auto waits = wait_counts(*f);
  INFO(kernel << " never waits for a group (no DEPBAR.LE SB0: cp.async.wait_group): the compute reads tiles still "
                 "in flight ("
              << step << "; ./lab hint 08)");
  REQUIRE(!waits.empty());
  const int most = *std::max_element(waits.begin(), waits.end());
  INFO(kernel << " waits with cp.async.wait_group " << most << " at most (DEPBAR.LE SB0, " << most
              << "), in a pipeline "
                 "of "
              << stages << " stage(s): "
              << (most < stages - 1 ? "it waits for more groups than tile k's — the copies of the next tiles too — so "
                                      "nothing overlaps the compute"
                                    : "it lets tile k's own group still be pending when the compute reads it")
              << ". With one group committed per tile slot and stages - 1 slots ahead, the count is stages - 1, a "
                 "template argument derived from Stages ("
              << step << "; ./lab hint 08)");
  CHECK(most == stages - 1);
}

}  // namespace
