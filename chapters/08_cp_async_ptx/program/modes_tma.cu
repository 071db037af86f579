// Chapter 08 — the program's step-5 parts: every matrix of the checks through the tensor
// memory accelerator against the CPU, and --mode=tma: the 16-byte stride rule, then a
// pitched matrix of --cols words per row timed beside a read-only kernel over the same
// allocation. See modes.hpp.
#include "modes.hpp"

#include "cml/buffers.hpp"
#include "cml/errors.hpp"
#include "cml/table.hpp"
#include "cml/timing.hpp"

#include <cstdio>
#include <stdexcept>
#include <string>
#include <vector>

namespace ch08 {

bool check_tma(Context& c, DeviceReport& report) {
  bool ok = true;
  const int box_rows = tma_plan().box_rows;
  for (const auto& mc : matrix_cases()) {
    const HostMatrix hm = make_matrix(mc.rows, mc.cols, mc.pitch);
    const DeviceMatrix dm(hm);
    cml::DeviceBuffer<Word> partial(static_cast<std::size_t>(mc.blocks));
    for (const int compute : {0, 3})
      for (int stages = 1; stages <= kMaxStages; ++stages) {
        const auto job = make_matrix_job(dm.view, partial.data(), mc.blocks, compute, stages, report.get());
        const Outcome o =
            run_once([&](cudaStream_t s) { sum_tma(job, s); }, partial.data(), mc.blocks, report, c.stream);
        ok &= judge(
            o, check_box_partials(o.partials, reference_box_partials(hm, mc.blocks, compute, box_rows), hm, box_rows),
            "tma, " + std::string(mc.what) + ", compute " + std::to_string(compute) + ", stages " +
                std::to_string(stages));
        if (!o.stalled.empty()) return false;  // the kernel's other waits gave up too: nothing more to learn
      }
  }
  return ok;
}

bool tma_mode(Context& c) {
  if (!c.sm90()) {
    if (c.s.mode == "tma") c.require_sm90("--mode=tma");
    std::printf("\ntma: skipped: %s\n", c.sm90_missing("the tensor memory accelerator").c_str());
    return true;
  }
  const std::size_t cols = c.s.cols, pitch = (cols + 3) / 4 * 4;
  const TmaPlan plan = tma_plan();
  std::printf(
      "\n== A matrix of %zu-word rows through the tensor memory accelerator, boxes of %d x %d words "
      "(tma_plan: %d stages) ==\n",
      cols, plan.box_rows, kBoxCols, plan.stages);
  if (cols * sizeof(Word) % 16 == 0) {
    std::printf("rows of %zu words are %zu bytes, a multiple of 16: no padding needed\n", cols, cols * sizeof(Word));
  } else {
    Matrix unpitched;  // the stride rule is checked before the address is looked at: none is needed
    unpitched.rows = 16;
    unpitched.cols = unpitched.pitch = cols;
    try {
      (void)tensor_map_for(unpitched, plan.box_rows);
      std::printf("unpitched: tensor_map_for accepted rows %zu bytes apart (step 5 refuses them)\n",
                  cols * sizeof(Word));
    } catch (const std::invalid_argument& e) {
      std::printf("unpitched: %s\n", e.what());
    }
  }
  const std::size_t rows = c.s.size / (pitch * sizeof(Word));
  const int blocks = c.blocks(c.s.blocks_per_sm);
  std::printf("pitched: %zu rows x %zu words, pitch %zu words (%zu bytes), %zu boxes, %d blocks per SM, compute %d\n",
              rows, cols, pitch, pitch * sizeof(Word), box_count(Matrix{nullptr, rows, cols, pitch}, plan.box_rows),
              c.s.blocks_per_sm, c.s.compute);
  const HostMatrix hm = make_matrix(rows, cols, pitch);
  const DeviceMatrix dm(hm);
  cml::DeviceBuffer<Word> partial(static_cast<std::size_t>(blocks));
  DeviceReport report;
  std::vector<cml::Work> work = {[&](cudaStream_t s) {
    sum_read_only(make_job(dm.words.data(), rows * pitch, partial.data(), blocks, c.s.compute, 1), s);
  }};
  for (int st = 1; st <= kMaxStages; ++st)
    work.push_back([&, st](cudaStream_t s) {
      sum_tma(make_matrix_job(dm.view, partial.data(), blocks, c.s.compute, st, report.get()), s);
    });
  const auto stats = cml::time_interleaved(work, c.stream, c.run.timing);
  cml::Table t("tma", {"kernel", "stages", "ms", "GB/s", "of read-only"});
  const double ro_gbps = cml::gbps(rows * pitch * sizeof(Word), stats[0].median_ms);
  t.row({"read-only (every word of the allocation, padding included)", "-", cml::with_noise(stats[0]),
         cml::fixed(ro_gbps, 0), "1.000"});
  for (int st = 1; st <= kMaxStages; ++st) {
    const double g = cml::gbps(rows * cols * sizeof(Word), stats[static_cast<std::size_t>(st)].median_ms);
    t.row({st == plan.stages ? "tma (the words inside the matrix), tma_plan's stages"
                             : "tma (the words inside the matrix)",
           std::to_string(st), cml::with_noise(stats[static_cast<std::size_t>(st)]), cml::fixed(g, 0),
           cml::fixed(g / ro_gbps, 3)});
  }
  c.run.emit(t);
  bool ok = true;
  const auto want = reference_box_partials(hm, blocks, c.s.compute, plan.box_rows);
  for (int st = 1; st <= kMaxStages; ++st) {
    const auto job = make_matrix_job(dm.view, partial.data(), blocks, c.s.compute, st, report.get());
    const Outcome o = run_once([&](cudaStream_t s) { sum_tma(job, s); }, partial.data(), blocks, report, c.stream);
    ok &= judge(o, check_box_partials(o.partials, want, hm, plan.box_rows),
                "tma, stages " + std::to_string(st) + " (the timed matrix)");
  }
  return ok;
}

}  // namespace ch08
