// Chapter 09 — one shape measured: every function that computes it checked against cuBLAS,
// then the right ones timed interleaved with cuBLAS. See modes.hpp.
#include "modes.hpp"

#include "cml/errors.hpp"
#include "cml/timing.hpp"

#include <cstdio>
#include <stdexcept>
#include <string>
#include <vector>

namespace ch09 {

const Timed& cublas_row(const std::vector<Timed>& rows) { return rows.back(); }

std::string of_cublas(const Timed& row, const std::vector<Timed>& rows) {
  const Timed& ceiling = cublas_row(rows);
  if (!row.timed() || !ceiling.timed() || row.stats.median_ms <= 0) return "-";
  return cml::fixed(ceiling.stats.median_ms / row.stats.median_ms, 3);
}

std::vector<Timed> measure(Context& c, const Shape& shape, bool& ok) {
  std::printf("\n-- %s: %.3g GFLOP, checked against cuBLAS, then timed --\n", describe(shape).c_str(),
              flops(shape) / 1e9);
  const Problem p(shape);
  std::vector<Timed> rows;

  // cuBLAS first: its result is what the others are checked against, so it is checked
  // against the CPU (a sample: the corners, the edges, the tile boundaries).
  const CublasResult ceiling = checked_cublas(c.cublas, p, c.stream);
  const Report& cublas_report = ceiling.against_cpu;
  std::printf("cuBLAS against the CPU (%zu sampled elements): %s\n", cublas_report.checked,
              cublas_report.describe().c_str());
  Timed cublas_timed{"cuBLAS", -1, cublas_report.ok ? "ok" : "wrong", {}};
  if (!cublas_report.ok) ok = false;

  const Reference want = cublas_reference(p, ceiling.c.c);
  std::vector<cml::Work> work;
  std::vector<std::size_t> timed_rows;
  for (const Variant& v : variants()) {
    if (v.is_gram() != shape.gram) continue;
    Timed row{v.label(), v.step, "ok", {}};
    if (!c.can_run(v)) {
      row.status = "skipped: " + c.missing(v);
      std::printf("%s: skipped: %s\n", row.name.c_str(), c.missing(v).c_str());
    } else if (!cublas_report.ok) {
      row.status = "not checked";
    } else {
      try {
        const Report r = run_and_compare(
            p, [&](cudaStream_t s) { run(v, p, s); }, want, c.stream);
        if (!r.ok) {
          row.status = "wrong";
          ok = false;
          std::printf("%s: %s\n", row.name.c_str(), r.describe().c_str());
        }
      } catch (const cml::Skip& e) {
        row.status = std::string("skipped: ") + e.what();
        std::printf("%s: skipped: %s\n", row.name.c_str(), e.what());
      } catch (const std::invalid_argument& e) {
        row.status = "threw";
        ok = false;
        std::printf("%s: FAILED: threw std::invalid_argument on a valid shape: %s\n", row.name.c_str(), e.what());
      }
    }
    if (row.timed()) {
      work.push_back([&p, &v](cudaStream_t s) { run(v, p, s); });
      timed_rows.push_back(rows.size());
    }
    rows.push_back(row);
  }
  if (cublas_timed.timed()) {
    work.push_back([&c, &p](cudaStream_t s) { run_cublas(c.cublas, p, s); });
    timed_rows.push_back(rows.size());
  }
  rows.push_back(cublas_timed);
  std::size_t right = 0;
  for (const Timed& r : rows) right += r.timed() && r.step >= 0 ? 1 : 0;
  if (cublas_report.ok)
    std::printf(
        "%zu function(s) match cuBLAS within the FP32 bound; timing them with cuBLAS, interleaved (%d runs "
        "each after %d warm-up rounds)\n",
        right, c.run.timing.iters, c.run.timing.warmup);
  if (!work.empty()) {
    const auto stats = cml::time_interleaved(work, c.stream, c.run.timing);
    for (std::size_t i = 0; i < stats.size(); ++i) rows[timed_rows[i]].stats = stats[i];
  }
  return rows;
}

}  // namespace ch09
