// Chapter 09 — --mode=check: every function, and cuBLAS, against the CPU on the checked
// shapes (harness.hpp: whole tiles, ragged edges, a K tail, non-square, k = 1, one row, one
// column, k = 0, m = 0, n = 0, a wide leading dimension), each failure named in learner
// terms, and what the failing shapes have in common. See modes.hpp.
#include "modes.hpp"

#include "cml/errors.hpp"

#include <cstdio>
#include <functional>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

namespace ch09 {

namespace {

// A checked shape: the problem on the device and its CPU reference, made once for all the
// functions that compute it.
struct Case {
  std::unique_ptr<Problem> problem;
  Reference reference;
};

std::vector<Case> make_cases(const std::vector<Shape>& shapes) {
  std::vector<Case> cases;
  for (const Shape& s : shapes) {
    auto p = std::make_unique<Problem>(s);
    Reference r = cpu_reference(*p);
    cases.push_back({std::move(p), std::move(r)});
  }
  return cases;
}

// Runs `enqueue` on every case: a line per failing shape, then what the failing shapes have
// in common, or one PASSED line. A std::invalid_argument on a valid shape is a failure.
bool check_on(Context& c, const std::string& name, const std::vector<Case>& cases,
              const std::function<void(const Problem&, cudaStream_t)>& enqueue) {
  std::vector<ShapeVerdict> verdicts;
  for (const Case& k : cases) {
    const Problem& p = *k.problem;
    std::string failure;
    try {
      const Report r = run_and_compare(
          p, [&](cudaStream_t s) { enqueue(p, s); }, k.reference, c.stream);
      if (!r.ok) failure = r.describe();
    } catch (const std::invalid_argument& e) {
      failure = std::string("FAILED: threw std::invalid_argument on a valid shape: ") + e.what();
    }
    if (!failure.empty()) std::printf("%s, %s: %s\n", name.c_str(), describe(p.shape()).c_str(), failure.c_str());
    verdicts.push_back({p.shape(), failure.empty()});
  }
  std::size_t failed = 0;
  for (const auto& v : verdicts) failed += v.ok ? 0 : 1;
  if (failed == 0) {
    std::printf("%s: PASSED on %zu shapes\n", name.c_str(), verdicts.size());
    return true;
  }
  const std::string pattern = failure_pattern(verdicts);
  std::printf("%s: FAILED on %zu of %zu shapes%s%s\n", name.c_str(), failed, verdicts.size(),
              pattern.empty() ? "" : ": ", pattern.c_str());
  return false;
}

}  // namespace

bool check_mode(Context& c) {
  std::printf(
      "\n== Every function against the CPU: ragged, non-square, k = 1, one row or column, k = 0, m or n = 0 "
      "==\n");
  std::printf(
      "(C is poisoned and shared memory filled with NaN before each run; A's and B's pads hold NaN; the "
      "bound is the FP32 rounding of a k-term sum, harness.hpp)\n");
  const std::vector<Case> gemm = make_cases(gemm_shapes()), gram = make_cases(gram_shapes());
  bool ok = true;
  for (const Variant& v : variants()) {
    if (!c.can_run(v)) {
      std::printf("%s: skipped: %s\n", v.label().c_str(), c.missing(v).c_str());
      continue;
    }
    try {
      ok &= check_on(c, v.label(), v.is_gram() ? gram : gemm, [&v](const Problem& p, cudaStream_t s) { run(v, p, s); });
    } catch (const cml::Skip& e) {
      std::printf("%s: skipped: %s\n", v.label().c_str(), e.what());
    }
  }
  // The ceiling is checked too: the tables compare every step with it.
  ok &= check_on(c, "cuBLAS (A B)", gemm, [&c](const Problem& p, cudaStream_t s) { run_cublas(c.cublas, p, s); });
  ok &= check_on(c, "cuBLAS (A A^T, b_transposed)", gram,
                 [&c](const Problem& p, cudaStream_t s) { run_cublas(c.cublas, p, s); });
  return ok;
}

}  // namespace ch09
