// Chapter 08 — --mode=cache-hints: the optional parts of cp.async (hint_copies.hpp), each
// copy checked against the CPU and its SASS read from this program, then timed interleaved:
// (1) a stream of --size through shared memory with each hint, beside cudaMemcpy; (2) what
// an L2 policy is for: a hot array copied again after a stream of --size, the stream plain
// or evict_first, or the hot array evict_last, with the persisting L2 set-aside as found and
// at its largest; (3) ignore-src: half of the pieces not read,
// in runs of 512 bytes or of 16, against copying them all. See modes.hpp.
#include "hint_copies.hpp"
#include "modes.hpp"
#include "own_code.hpp"

#include "cml/buffers.hpp"
#include "cml/errors.hpp"
#include "cml/l2_persist.hpp"
#include "cml/table.hpp"
#include "cml/timing.hpp"
#include "cml/verify.hpp"

#include <algorithm>
#include <cstdio>
#include <regex>
#include <string>
#include <vector>

namespace ch08 {

namespace {

using cml::fixed;

// What a masked copy must leave: the input, with zeros in the masked pieces.
std::vector<Word> masked_copy(const std::vector<Word>& in, unsigned run_log2) {
  std::vector<Word> want = in;
  for (std::size_t p = 0; p < in.size() / 4; ++p)
    if (masked(p, run_log2)) std::fill(want.begin() + 4 * p, want.begin() + 4 * p + 4, 0u);
  return want;
}

// ---- What the compiler made of each copy (this program's SASS) -----------------------

// The kernel's first LDGSTS, whole ("LDGSTS.E.BYPASS.LTC128B.128 [R0], desc[UR8][R24.64]").
std::string copy_instruction(const std::string& name) {
  std::string why;
  const auto f = compiled(name, why);
  if (!f) return "(" + why.substr(0, 50) + ")";
  const std::string ins = cml::sass::first_containing(*f, "LDGSTS");
  return ins.empty() ? "no LDGSTS" : ins;
}

// Where the first LDGSTS's memory descriptor (desc[URn]) was last written before it: the
// default descriptor from the constant bank (ULDC.64 URn, c[0x0][0x208]), or one the kernel
// builds in uniform registers — which is how nvcc 13.0 carries an L2 cache policy on sm_90
// (docs/08). The opcode itself does not change with the policy.
std::string descriptor_source(const std::string& name) {
  std::string why;
  const auto f = compiled(name, why);
  if (!f) return "-";
  const auto& ins = f->instructions;
  const auto first =
      std::find_if(ins.begin(), ins.end(), [](const std::string& s) { return s.rfind("LDGSTS", 0) == 0; });
  std::smatch m;
  static const std::regex desc(R"(desc\[(UR\d+)\])");
  if (first == ins.end() || !std::regex_search(*first, m, desc)) return "-";
  const std::string reg = m[1];
  for (auto it = std::make_reverse_iterator(first); it != ins.rend(); ++it) {
    const auto space = it->find(' ');
    if (space == std::string::npos) continue;
    const std::string dest = it->substr(space + 1, it->find(',', space) - space - 1);
    if (dest != reg) continue;
    if (it->find("c[0x0][0x208]") != std::string::npos) return "c[0x0][0x208], the default";
    return reg + ":UR" + std::to_string(std::stoi(reg.substr(2)) + 1) + ", built in the kernel";
  }
  return "-";
}

// ---- The checks -------------------------------------------------------------------------

bool check_copies(Context& c) {
  bool ok = true;
  for (const auto& k : hint_kinds()) {
    bool kind_ok = true;
    for (const auto& pc : piece_cases()) {
      Pieces a(pc.pieces);
      const auto got = a.landed(
          [&](cudaStream_t s) { copy_hinted(k.hint, a.in.data(), a.count(), a.out.data(), pc.blocks, s); }, c.stream);
      kind_ok &= same_words(got, a.host, std::string(k.name) + ", " + std::to_string(pc.pieces) + " pieces");
    }
    if (kind_ok) std::printf("%s: PASSED on %zu lengths\n", k.name, piece_cases().size());
    ok &= kind_ok;
  }
  for (const Unread how : {Unread::ignore_src, Unread::src_size_zero})
    for (const unsigned run_log2 : {0u, 5u}) {
      bool mask_ok = true;
      for (const auto& pc : piece_cases()) {
        Pieces a(pc.pieces);
        const auto got = a.landed(
            [&](cudaStream_t s) { copy_masked(how, run_log2, a.in.data(), a.count(), a.out.data(), pc.blocks, s); },
            c.stream);
        mask_ok &= same_words(got, masked_copy(a.host, run_log2),
                              std::string(how == Unread::ignore_src ? "ignore-src" : "src-size 0") + ", runs of " +
                                  std::to_string(1u << run_log2) + " pieces, " + std::to_string(pc.pieces) +
                                  " pieces (a masked piece must land as zeros)");
      }
      if (mask_ok)
        std::printf("%s, every other run of %u pieces: PASSED on %zu lengths (zeros landed in the pieces not read)\n",
                    how == Unread::ignore_src ? "ignore-src" : "src-size 0", 1u << run_log2, piece_cases().size());
      ok &= mask_ok;
    }
  return ok;
}

// ---- (1) a stream with each hint --------------------------------------------------------

bool time_hints(Context& c, Pieces& a, int blocks) {
  std::vector<cml::Work> work = {[&](cudaStream_t s) {
    CUDA_CHECK(cudaMemcpyAsync(a.out.data(), a.in.data(), a.bytes(), cudaMemcpyDeviceToDevice, s));
  }};
  for (const auto& k : hint_kinds())
    work.push_back([&, k](cudaStream_t s) { copy_hinted(k.hint, a.in.data(), a.count(), a.out.data(), blocks, s); });
  const auto st = cml::time_interleaved(work, c.stream, c.run.timing);
  cml::Table t("cache_hints",
               {"copy", "SASS: its first copy", "the copy's memory descriptor", "ms", "GB/s", "of cudaMemcpy"});
  const std::size_t bytes = 2 * a.bytes();
  t.row({"cudaMemcpy device to device", "-", "-", cml::with_noise(st[0]), fixed(cml::gbps(bytes, st[0].median_ms), 0),
         "1.000"});
  for (std::size_t i = 0; i < hint_kinds().size(); ++i) {
    const auto& k = hint_kinds()[i];
    t.row({k.name, copy_instruction(k.kernel), descriptor_source(k.kernel), cml::with_noise(st[i + 1]),
           fixed(cml::gbps(bytes, st[i + 1].median_ms), 0), fixed(st[0].median_ms / st[i + 1].median_ms, 3)});
  }
  c.run.emit(t);
  bool ok = true;
  for (const auto& k : hint_kinds())
    ok &= same_words(
        a.landed([&](cudaStream_t s) { copy_hinted(k.hint, a.in.data(), a.count(), a.out.data(), blocks, s); },
                 c.stream),
        a.host, std::string(k.name) + " (the timed size)");
  return ok;
}

// ---- (2) what an L2 policy is for ----------------------------------------------------------

bool time_reuse(Context& c, Pieces& cold, int blocks) {
  // In and out of the hot copy together fill half of the L2: it can stay there.
  Pieces hot(std::max<std::size_t>(c.run.facts.l2_bytes / 4 / sizeof(Piece), 1));
  const auto copy = [blocks](Pieces& p, Hint h) {
    return [&p, h, blocks](cudaStream_t s) { copy_hinted(h, p.in.data(), p.count(), p.out.data(), blocks, s); };
  };
  const auto both = [](cml::Work first, cml::Work second) {
    return [first, second](cudaStream_t s) {
      first(s);
      second(s);
    };
  };
  struct Before {
    const char* what;
    cml::Work prepare;
  };
  const std::vector<Before> before = {
      {"the hot copy itself, nothing else", copy(hot, Hint::none)},
      {"the hot copy, then the stream, plain", both(copy(hot, Hint::none), copy(cold, Hint::none))},
      {"the hot copy, then the stream, evict_first", both(copy(hot, Hint::none), copy(cold, Hint::evict_first))},
      {"the hot copy evict_last, then the stream, plain", both(copy(hot, Hint::evict_last), copy(cold, Hint::none))},
  };
  std::vector<cml::Work> prepare, work;
  for (const auto& b : before) {
    prepare.push_back(b.prepare);
    work.push_back(copy(hot, Hint::none));
  }
  const auto measure = [&](const char* table, const std::string& set_aside) {
    const auto st = cml::time_interleaved(prepare, work, c.stream, c.run.timing);
    std::printf(
        "\n-- The hot array: %s MiB copied (in and out: half of the %s MiB L2), timed right after what each row "
        "names; the stream: %s MiB; %s --\n",
        fixed(hot.bytes() / 1048576.0, 1).c_str(), fixed(c.run.facts.l2_bytes / 1048576.0, 0).c_str(),
        fixed(cold.bytes() / 1048576.0, 0).c_str(), set_aside.c_str());
    cml::Table t(table, {"before each timed copy of the hot array", "ms", "GB/s", "of the first row's time"});
    for (std::size_t i = 0; i < before.size(); ++i)
      t.row({before[i].what, cml::with_noise(st[i]), fixed(cml::gbps(2 * hot.bytes(), st[i].median_ms), 0),
             fixed(st[0].median_ms / st[i].median_ms, 3)});
    c.run.emit(t);
  };
  {
    std::size_t limit = 0;
    CUDA_CHECK(cudaDeviceGetLimit(&limit, cudaLimitPersistingL2CacheSize));
    measure("cache_hints_reuse", "persisting set-aside (cudaLimitPersistingL2CacheSize) " +
                                     fixed(limit / 1048576.0, 1) + " MiB, as this process found it");
  }
  // The same rows with the largest set-aside the device allows: evict_last lines may be
  // kept only inside it (docs/08, "What an L2 policy is for").
  const cml::PersistLimits limits = cml::persist_limits(c.run.facts.index);
  if (limits.max_persisting == 0) {
    std::printf(
        "(no persisting L2 on this GPU: cudaDevAttrMaxPersistingL2CacheSize is 0; the set-aside rows are "
        "skipped)\n");
  } else {
    const cml::PersistingCarveOut carve(limits.max_persisting);
    if (!carve.why_not().empty())
      std::printf("(the set-aside rows are skipped: %s)\n", carve.why_not().c_str());
    else
      measure("cache_hints_reuse_set_aside",
              "persisting set-aside " + fixed(carve.granted() / 1048576.0, 1) + " MiB, the most this GPU allows");
  }
  const bool hot_ok = same_words(hot.landed(copy(hot, Hint::none), c.stream), hot.host, "the hot array's copy");
  return same_words(cold.landed(copy(cold, Hint::evict_first), c.stream), cold.host, "the stream, evict_first") &&
         hot_ok;
}

// ---- (3) ignore-src ---------------------------------------------------------------------------

bool time_masked(Context& c, Pieces& a, int blocks) {
  struct Masked {
    const char* what;
    const char* read;
    Unread how;
    unsigned run_log2;
    const char* kernel;
  };
  const char* const kIgnore = "ch08::masked_copy_kernel<(ch08::Unread)0>";
  const char* const kZero = "ch08::masked_copy_kernel<(ch08::Unread)1>";
  const std::vector<Masked> rows = {
      {"ignore-src, every other 512 bytes", "half, in runs of 32 pieces", Unread::ignore_src, 5, kIgnore},
      {"src-size 0, every other 512 bytes", "half, in runs of 32 pieces", Unread::src_size_zero, 5, kZero},
      {"ignore-src, every other 16 bytes", "half, every other piece", Unread::ignore_src, 0, kIgnore},
  };
  std::vector<cml::Work> work = {
      [&](cudaStream_t s) { copy_hinted(Hint::none, a.in.data(), a.count(), a.out.data(), blocks, s); }};
  for (const auto& r : rows)
    work.push_back(
        [&, r](cudaStream_t s) { copy_masked(r.how, r.run_log2, a.in.data(), a.count(), a.out.data(), blocks, s); });
  const auto st = cml::time_interleaved(work, c.stream, c.run.timing);
  cml::Table t("cache_hints_masked", {"copy", "pieces read", "SASS: its first copy", "ms", "of the full copy's time"});
  t.row({"every piece (cp.async.cg, no hint)", "all", copy_instruction(hint_kinds()[0].kernel), cml::with_noise(st[0]),
         "1.000"});
  for (std::size_t i = 0; i < rows.size(); ++i)
    t.row({rows[i].what, rows[i].read, copy_instruction(rows[i].kernel), cml::with_noise(st[i + 1]),
           fixed(st[0].median_ms / st[i + 1].median_ms, 3)});
  c.run.emit(t);
  std::printf("(a 32-byte sector holds two pieces: with every other piece masked, every sector is still read)\n");
  bool ok = true;
  for (const auto& r : rows)
    ok &= same_words(
        a.landed(
            [&](cudaStream_t s) { copy_masked(r.how, r.run_log2, a.in.data(), a.count(), a.out.data(), blocks, s); },
            c.stream),
        masked_copy(a.host, r.run_log2), std::string(r.what) + " (the timed size)");
  return ok;
}

}  // namespace

bool cache_hints_mode(Context& c) {
  std::printf(
      "\n== The optional parts of cp.async: L2 cache policies, L2 prefetch sizes, ignore-src — checked on lengths "
      "that are not multiples of a round ==\n");
  bool ok = check_copies(c);
  const int blocks = c.blocks(c.s.blocks_per_sm);
  Pieces a(c.s.size / sizeof(Piece));
  std::printf("\n-- %s MiB in 16-byte pieces through shared memory, %d blocks per SM; GB/s = bytes read + written --\n",
              fixed(a.bytes() / 1048576.0, 0).c_str(), c.s.blocks_per_sm);
  ok &= time_hints(c, a, blocks);
  ok &= time_reuse(c, a, blocks);
  std::printf("\n-- ignore-src: half of the pieces land as zeros and are not read --\n");
  ok &= time_masked(c, a, blocks);
  return ok;
}

}  // namespace ch08
