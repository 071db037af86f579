// Chapter 08 — the program's pipeline modes: every pipeline against the CPU, the timed
// comparison with register staging and the read-only kernel on the same job, and the
// stages x occupancy sweep. See modes.hpp.
#include "modes.hpp"

#include "cml/buffers.hpp"
#include "cml/errors.hpp"
#include "cml/table.hpp"
#include "cml/timing.hpp"
#include "cml/verify.hpp"

#include <cstdio>
#include <string>
#include <vector>

namespace ch08 {

namespace {

using cml::fixed;

std::vector<const Variant*> chosen_variants(const Context& c, bool with_references) {
  std::vector<const Variant*> out;
  for (const auto& v : variants()) {
    const bool reference = v.step == 0;
    if (c.s.variant == "all" || c.s.variant == v.name || (with_references && reference)) {
      if (v.sm90 && !c.sm90()) {
        std::printf("%s: skipped: %s\n", v.name, c.sm90_missing(v.name).c_str());
        continue;
      }
      out.push_back(&v);
    }
  }
  return out;
}

// The matrix view of a 1D array for the TMA rows of the timed comparisons: rows of 8192
// words (32 KiB: a multiple of 16 bytes, no padding), as many as the array holds whole.
Matrix matrix_view(const Word* in, std::size_t n) {
  Matrix m;
  m.data = in;
  m.cols = m.pitch = 8192;
  m.rows = n / m.cols;
  return m;
}

}  // namespace

bool check_mode(Context& c) {
  std::printf("\n== Every pipeline against the CPU (sizes not multiples of 4, of the tile or of the stages) ==\n");
  DeviceReport report;
  bool ok = true;
  for (const auto& v : variants()) {
    if (v.step == 0) continue;  // the provided kernel: register staging, checked by chapter 07's program too
    if (v.sm90 && !c.sm90()) {
      std::printf("%s: skipped: %s\n", v.name, c.sm90_missing(v.name).c_str());
      continue;
    }
    bool variant_ok = true;
    std::size_t runs = 0;
    for (const auto& k : sum_cases()) {
      const auto host = make_input(k.n);
      const auto in = to_device(host, k.n + 1);
      cml::DeviceBuffer<Word> partial(static_cast<std::size_t>(k.blocks));
      for (const int compute : {0, 3})
        for (int stages = 1; stages <= kMaxStages && variant_ok; ++stages, ++runs) {
          const Job job = make_job(in.data(), k.n, partial.data(), k.blocks, compute, stages, report.get());
          const Outcome o = run_once([&](cudaStream_t s) { v.fn(job, s); }, partial.data(), k.blocks, report, c.stream);
          variant_ok &= judge(o, check_partials(o.partials, reference_partials(host, k.blocks, compute), k.n),
                              std::string(v.name) + ", n = " + std::to_string(k.n) + " (" + k.what + "), compute " +
                                  std::to_string(compute) + ", stages " + std::to_string(stages));
        }
    }
    if (variant_ok) std::printf("%s (%s): PASSED in %zu runs\n", v.name, v.what, runs);
    ok &= variant_ok;
  }
  // The read-only kernel computes the same sums: the timed runs are compared with it.
  {
    const auto& k = sum_cases().back();
    const auto host = make_input(k.n);
    const auto in = to_device(host, k.n);
    cml::DeviceBuffer<Word> partial(static_cast<std::size_t>(k.blocks));
    const Job job = make_job(in.data(), k.n, partial.data(), k.blocks, 5, 1);
    const Outcome o =
        run_once([&](cudaStream_t s) { sum_read_only(job, s); }, partial.data(), k.blocks, report, c.stream);
    ok &= cml::report(check_partials(o.partials, reference_partials(host, k.blocks, 5), k.n), "read-only ceiling");
  }
  if (!c.sm90()) {
    std::printf("tma: skipped: %s\n", c.sm90_missing("tma").c_str());
  } else if (check_tma(c, report)) {
    std::printf("tma (2D boxes through a tensor map): PASSED on %zu matrices, edges and pitches included\n",
                matrix_cases().size());
  } else {
    ok = false;
  }
  return ok;
}

namespace {

// One timed row: its name, stage count (0: not staged), the bytes it reads, its Stats.
struct Timed {
  std::string name;
  int stages;
  std::size_t bytes;
  cml::Stats stats;
};

// Times the chosen variants at `stage_list`, the read-only kernel and (on sm_90, when
// asked) TMA over the array's matrix view, interleaved; checks each variant's sums against
// read-only's (TMA's total against read-only's over the same words). Rows in timing order.
std::vector<Timed> time_point(Context& c, const Word* in, std::size_t n, Word* partial, int blocks,
                              const std::vector<const Variant*>& chosen, const std::vector<int>& stage_list,
                              bool with_tma, DeviceReport& report, bool& ok) {
  std::vector<cml::Work> work;
  std::vector<Timed> rows;
  const std::size_t bytes = n * sizeof(Word);
  const int compute = c.s.compute;
  work.push_back([=](cudaStream_t s) { sum_read_only(make_job(in, n, partial, blocks, compute, 1), s); });
  rows.push_back({"read-only", 0, bytes, {}});
  for (const auto* v : chosen)
    for (const int st : v->staged ? stage_list : std::vector<int>{1}) {
      const Job job = make_job(in, n, partial, blocks, c.s.compute, st, report.get());
      work.push_back([v, job](cudaStream_t s) { v->fn(job, s); });
      rows.push_back({v->name, v->staged ? st : 0, bytes, {}});
    }
  const Matrix view = matrix_view(in, n);
  const bool tma = with_tma && c.sm90() && view.rows > 0;
  if (tma)
    for (const int st : stage_list) {
      const MatrixJob job = make_matrix_job(view, partial, blocks, c.s.compute, st, report.get());
      work.push_back([job](cudaStream_t s) { sum_tma(job, s); });
      rows.push_back({"tma", st, view.rows * view.cols * sizeof(Word), {}});
    }
  report.reset();
  const auto st = cml::time_interleaved(work, c.stream, c.run.timing);
  for (std::size_t i = 0; i < rows.size(); ++i) rows[i].stats = st[i];
  if (const std::string why = describe(report.read()); !why.empty()) {
    std::printf("timed runs: FAILED: %s\n", why.c_str());
    ok = false;
    return rows;
  }
  // The timed configurations' sums, each against the read-only kernel's.
  const auto want =
      run_once([&](cudaStream_t s) { sum_read_only(make_job(in, n, partial, blocks, c.s.compute, 1), s); }, partial,
               blocks, report, c.stream);
  for (const auto* v : chosen)
    for (const int s : v->staged ? stage_list : std::vector<int>{1}) {
      const Job job = make_job(in, n, partial, blocks, c.s.compute, s, report.get());
      const Outcome o = run_once([&](cudaStream_t x) { v->fn(job, x); }, partial, blocks, report, c.stream);
      ok &= judge(o, check_partials(o.partials, want.partials, n),
                  std::string(v->name) + " (timed run, against the read-only kernel)");
    }
  if (tma) {
    const auto total = [](const std::vector<Word>& p) {
      Word t = 0;
      for (const Word w : p) t += w;
      return t;
    };
    const auto ro = run_once(
        [&](cudaStream_t s) { sum_read_only(make_job(in, view.rows * view.cols, partial, blocks, c.s.compute, 1), s); },
        partial, blocks, report, c.stream);
    for (const int s : stage_list) {
      const MatrixJob job = make_matrix_job(view, partial, blocks, c.s.compute, s, report.get());
      const Outcome o = run_once([&](cudaStream_t x) { sum_tma(job, x); }, partial, blocks, report, c.stream);
      const Word got = total(o.partials), want_total = total(ro.partials);
      ok &= judge(o, cml::compare_exact(&got, &want_total, 1),
                  "tma (timed run: the total of its sums against the "
                  "read-only kernel's over the same words)");
    }
  }
  return rows;
}

}  // namespace

bool variants_mode(Context& c) {
  const std::size_t n = c.s.size / sizeof(Word);
  const int blocks = c.blocks(c.s.blocks_per_sm);
  std::printf(
      "\n== %zu words (%s MiB), compute %d, %d blocks per SM (%d blocks), %d stages; GB/s = 10^9 bytes read "
      "per second ==\n",
      n, fixed(c.s.size / 1048576.0, 0).c_str(), c.s.compute, c.s.blocks_per_sm, blocks, c.s.stages);
  const auto in = to_device(make_input(n), n);
  cml::DeviceBuffer<Word> partial(static_cast<std::size_t>(blocks));
  DeviceReport report;
  bool ok = true;
  const bool with_tma = c.s.variant == "all" || c.s.variant == "tma";
  const auto rows =
      time_point(c, in.data(), n, partial.data(), blocks, chosen_variants(c, true), {c.s.stages}, with_tma, report, ok);
  double sync_ms = 0;
  for (const auto& r : rows)
    if (r.name == "sync") sync_ms = r.stats.median_ms;
  cml::Table t("variants", {"variant", "stages", "ms", "GB/s", "of read-only", "of sync"});
  for (const auto& r : rows)
    t.row({r.name, r.stages ? std::to_string(r.stages) : "-", cml::with_noise(r.stats),
           fixed(cml::gbps(r.bytes, r.stats.median_ms), 0),
           fixed(cml::gbps(r.bytes, r.stats.median_ms) / cml::gbps(rows[0].bytes, rows[0].stats.median_ms), 3),
           sync_ms > 0 ? fixed(cml::gbps(r.bytes, r.stats.median_ms) / cml::gbps(rows[0].bytes, sync_ms), 3) : "-"});
  c.run.emit(t);
  std::printf(
      "(ratios are of GB/s: tma reads the array's whole 8192-word rows, the others all of it; sync is "
      "register staging, the pipelines' starting point. Chapter 07's cuda::pipeline runs the same job: "
      "./lab run 07 -- --mode=variants with the same --size, --stages, --blocks-per-sm)\n");
  return ok;
}

bool sweep_mode(Context& c) {
  const std::size_t n = c.s.size / sizeof(Word);
  const std::vector<int> per_sm = {1, 2, 4, 8}, stages = {1, 2, 3, 4};
  std::printf("\n== %s MiB, compute %d: every pipeline at stages 1-4 x 1-8 blocks per SM ==\n",
              fixed(c.s.size / 1048576.0, 0).c_str(), c.s.compute);
  const auto in = to_device(make_input(n), n);
  cml::DeviceBuffer<Word> partial(static_cast<std::size_t>(c.blocks(per_sm.back())));
  DeviceReport report;
  bool ok = true;
  const auto chosen = chosen_variants(c, true);
  cml::Table t("sweep", {"variant", "stages", "blocks per SM", "ms", "GB/s", "of read-only"});
  for (const int bps : per_sm) {
    const auto rows = time_point(c, in.data(), n, partial.data(), c.blocks(bps), chosen, stages,
                                 c.s.variant == "all" || c.s.variant == "tma", report, ok);
    for (const auto& r : rows)
      t.row({r.name, r.stages ? std::to_string(r.stages) : "-", std::to_string(bps), fixed(r.stats.median_ms, 4),
             fixed(cml::gbps(r.bytes, r.stats.median_ms), 0),
             fixed(cml::gbps(r.bytes, r.stats.median_ms) / cml::gbps(rows[0].bytes, rows[0].stats.median_ms), 3)});
  }
  c.run.emit(t);
  std::printf(
      "(a block holds up to 4 tiles of 4 KiB: 8 blocks of 256 threads fit on an SM. plot.py draws sweep.csv)\n");
  return ok;
}

}  // namespace ch08
