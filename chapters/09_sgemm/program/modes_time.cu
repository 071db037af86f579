// Chapter 09 — the timed tables: --mode=table (every step against cuBLAS at one shape),
// --mode=gram (step 2 against cuBLAS's A Aᵀ) and --mode=shapes (4096³, 8192³ and a ragged
// shape: what ./lab bench 09 records). See modes.hpp.
#include "modes.hpp"

#include "cml/table.hpp"
#include "cml/timing.hpp"

#include <cstdio>
#include <string>
#include <vector>

namespace ch09 {

namespace {

using cml::fixed;

std::string step_text(const Timed& r) { return r.step < 0 ? "-" : std::to_string(r.step); }
std::string ms_text(const Timed& r) { return r.timed() ? cml::with_noise(r.stats) : "-"; }
std::string gflops_text(const Shape& s, const Timed& r) {
  return r.timed() ? fixed(gflops(s, r.stats.median_ms), 0) : "-";
}

// One shape's rows as a table named `name`: time, speed, fraction of cuBLAS, and the
// shape's compulsory traffic and intensity (the same for every row: a property of the
// problem, not of the kernel).
void emit_rows(Context& c, const char* name, const Shape& shape, const std::vector<Timed>& rows) {
  cml::Table t(name, {"kernel", "step", "ms", "GFLOP/s", "of cuBLAS", "compulsory DRAM bytes", "FLOP/byte", "result"});
  char bytes[32];
  std::snprintf(bytes, sizeof bytes, "%.0f", dram_bytes(shape));
  for (const Timed& r : rows)
    t.row({r.name, step_text(r), ms_text(r), gflops_text(shape, r), of_cublas(r, rows), bytes,
           fixed(intensity(shape), 1), r.status});
  c.run.emit(t);
}

}  // namespace

bool table_mode(Context& c) {
  std::printf("\n== The steps against cuBLAS: GFLOP/s = 2 m n k / time, 10^9 per second ==\n");
  bool ok = true;
  const auto rows = measure(c, c.shape, ok);
  emit_rows(c, "sgemm", c.shape, rows);
  std::printf(
      "(of cuBLAS: cuBLAS's time over the row's, in the same interleaved run. Compulsory DRAM bytes: A and B "
      "read once, C written once; FLOP/byte: 2 m n k over them. --mode=roofline measures this GPU's FMA peak "
      "and DRAM bandwidth, and places each kernel on them)\n");
  return ok;
}

bool gram_mode(Context& c) {
  const Shape shape = gram_shape(c.shape.m, c.shape.k, "C = A A^T");
  std::printf("\n== Step 2, the Gram matrix, against cuBLAS's A A^T (b_transposed): GFLOP/s = 2 m m k / time ==\n");
  bool ok = true;
  const auto rows = measure(c, shape, ok);
  emit_rows(c, "gram", shape, rows);
  std::printf(
      "(both compute all of C, m x m: neither uses its symmetry. Compulsory DRAM bytes: A read once, C "
      "written once)\n");
  return ok;
}

bool shapes_mode(Context& c) {
  std::printf("\n== Every step against cuBLAS at 4096^3, 8192^3 and a ragged shape ==\n");
  bool ok = true;
  cml::Table t("shapes", {"shape", "kernel", "step", "ms", "GFLOP/s", "of cuBLAS", "result"});
  for (const Shape& shape : bench_shapes()) {
    const auto rows = measure(c, shape, ok);
    for (const Timed& r : rows)
      t.row({describe(shape), r.name, step_text(r), ms_text(r), gflops_text(shape, r), of_cublas(r, rows), r.status});
  }
  c.run.emit(t);
  std::printf(
      "(of cuBLAS: cuBLAS's time over the row's at the same shape, in the same interleaved run. The ragged "
      "shape has edge tiles on every side and a K tail: what it costs shows beside 4096^3)\n");
  return ok;
}

}  // namespace ch09
