// Chapter 09 — --mode=ceiling: which cuBLAS is the ceiling at one shape. cuBLAS's SGEMM as
// the course calls it (CUBLAS_PEDANTIC_MATH: the bars are fractions of this call), the same
// in the default math mode, and every FP32 algorithm (compute type 32F: no TF32) cuBLASLt's
// heuristic offers for the shape; each checked against the pedantic result, then all timed
// interleaved. The fastest right one is the honest ceiling (docs/09_sgemm.md: at 1280³ on an
// H100 a cuBLASLt algorithm ran 1.057x the default call). See modes.hpp.
#include "modes.hpp"

#include "cml/errors.hpp"
#include "cml/table.hpp"
#include "cml/timing.hpp"

#include <cublasLt.h>
#include <cublas_v2.h>

#include <cstdio>
#include <stdexcept>
#include <string>
#include <vector>

namespace ch09 {

namespace {

constexpr int kLtAlgorithms = 8;                   // the heuristic's best, at most
constexpr std::size_t kLtWorkspace = 32ull << 20;  // what each cuBLASLt algorithm may use

void check(cublasStatus_t s, const char* what) {
  if (s != CUBLAS_STATUS_SUCCESS) throw std::runtime_error(std::string(what) + " failed: " + cublasGetStatusString(s));
}

// cuBLASLt's FP32 matmul of the same column-major view as Cublas::sgemm (row-major C = A B
// is column-major Cᵀ = Bᵀ Aᵀ: the operands swap), and the algorithms its heuristic offers.
class LtMatmul {
 public:
  explicit LtMatmul(const Problem& p) : p_(p) {
    const ConstView a = p.a_view(), b = p.b_view();
    const View c = p.c_view();
    check(cublasLtCreate(&lt_), "cublasLtCreate");
    check(cublasLtMatmulDescCreate(&op_, CUBLAS_COMPUTE_32F, CUDA_R_32F), "cublasLtMatmulDescCreate");
    check(cublasLtMatrixLayoutCreate(&lb_, CUDA_R_32F, c.cols, a.cols, b.ld), "cublasLtMatrixLayoutCreate (B)");
    check(cublasLtMatrixLayoutCreate(&la_, CUDA_R_32F, a.cols, c.rows, a.ld), "cublasLtMatrixLayoutCreate (A)");
    check(cublasLtMatrixLayoutCreate(&lc_, CUDA_R_32F, c.cols, c.rows, c.ld), "cublasLtMatrixLayoutCreate (C)");
    CUDA_CHECK(cudaMalloc(&workspace_, kLtWorkspace));
    cublasLtMatmulPreference_t pref = nullptr;
    check(cublasLtMatmulPreferenceCreate(&pref), "cublasLtMatmulPreferenceCreate");
    const std::size_t bytes = kLtWorkspace;
    check(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &bytes, sizeof bytes),
          "cublasLtMatmulPreferenceSetAttribute");
    cublasLtMatmulHeuristicResult_t found[kLtAlgorithms] = {};
    int count = 0;
    const cublasStatus_t s =
        cublasLtMatmulAlgoGetHeuristic(lt_, op_, lb_, la_, lc_, lc_, pref, kLtAlgorithms, found, &count);
    cublasLtMatmulPreferenceDestroy(pref);
    check(s, "cublasLtMatmulAlgoGetHeuristic");
    for (int i = 0; i < count; ++i)
      if (found[i].state == CUBLAS_STATUS_SUCCESS) algorithms_.push_back(found[i].algo);
  }
  ~LtMatmul() {
    cudaFree(workspace_);
    cublasLtMatrixLayoutDestroy(lc_);
    cublasLtMatrixLayoutDestroy(la_);
    cublasLtMatrixLayoutDestroy(lb_);
    cublasLtMatmulDescDestroy(op_);
    cublasLtDestroy(lt_);
  }
  LtMatmul(const LtMatmul&) = delete;
  LtMatmul& operator=(const LtMatmul&) = delete;

  std::size_t algorithms() const { return algorithms_.size(); }
  void run(std::size_t i, cudaStream_t s) const {
    const float one = 1.0f, zero = 0.0f;
    const View c = p_.c_view();
    check(cublasLtMatmul(lt_, op_, &one, p_.b_view().data, lb_, p_.a_view().data, la_, &zero, c.data, lc_, c.data, lc_,
                         &algorithms_[i], workspace_, kLtWorkspace, s),
          "cublasLtMatmul");
  }

 private:
  const Problem& p_;
  cublasLtHandle_t lt_ = nullptr;
  cublasLtMatmulDesc_t op_ = nullptr;
  cublasLtMatrixLayout_t lb_ = nullptr, la_ = nullptr, lc_ = nullptr;
  void* workspace_ = nullptr;
  std::vector<cublasLtMatmulAlgo_t> algorithms_;
};

}  // namespace

bool ceiling_mode(Context& c) {
  const Shape& shape = c.shape;
  std::printf("\n== Which cuBLAS is the ceiling at %s: FP32 only, each checked, then timed interleaved ==\n",
              describe(shape).c_str());
  const Problem p(shape);
  p.poison_c(c.stream);
  run_cublas(c.cublas, p, c.stream);
  const Output pedantic = p.read_c(c.stream);
  const Reference sample = cpu_reference_sampled(p);
  const Report checked = compare(p, pedantic, sample);
  std::printf("cuBLAS (%s) against the CPU (%zu sampled elements): %s\n", Cublas::math_mode(), sample.count,
              checked.describe().c_str());
  if (!checked.ok) return false;
  const Reference want = cublas_reference(p, pedantic.c);

  Cublas default_math(false);
  const LtMatmul lt(p);
  struct Candidate {
    std::string name;
    cml::Work work;
    std::string status = "ok";
  };
  std::vector<Candidate> all = {
      {std::string("cuBLAS, ") + Cublas::math_mode() + " (the bars' ceiling)",
       [&](cudaStream_t s) { run_cublas(c.cublas, p, s); }},
      {"cuBLAS, default math mode", [&](cudaStream_t s) { default_math.sgemm(p.a_view(), p.b_view(), p.c_view(), s); }},
  };
  for (std::size_t i = 0; i < lt.algorithms(); ++i)
    all.push_back(
        {"cuBLASLt FP32, heuristic's algorithm " + std::to_string(i), [&lt, i](cudaStream_t s) { lt.run(i, s); }});
  bool ok = true;
  std::vector<cml::Work> work;
  std::vector<std::size_t> timed;
  for (std::size_t i = 0; i < all.size(); ++i) {
    if (i > 0) {
      const Report r = run_and_compare(p, all[i].work, want, c.stream);
      if (!r.ok) {
        all[i].status = "wrong";
        ok = false;
        std::printf("%s: %s\n", all[i].name.c_str(), r.describe().c_str());
        continue;
      }
    }
    work.push_back(all[i].work);
    timed.push_back(i);
  }
  const auto stats = cml::time_interleaved(work, c.stream, c.run.timing);
  std::size_t fastest = 0;
  for (std::size_t k = 1; k < stats.size(); ++k)
    if (stats[k].median_ms < stats[fastest].median_ms) fastest = k;
  cml::Table t("ceiling", {"cuBLAS call", "ms", "GFLOP/s", "of the bars' ceiling", "result"});
  for (std::size_t k = 0; k < stats.size(); ++k)
    t.row({all[timed[k]].name, cml::with_noise(stats[k]), cml::fixed(gflops(shape, stats[k].median_ms), 0),
           cml::fixed(stats[0].median_ms / stats[k].median_ms, 3), all[timed[k]].status});
  for (std::size_t i = 0; i < all.size(); ++i)
    if (all[i].status != "ok") t.row({all[i].name, "-", "-", "-", all[i].status});
  c.run.emit(t);
  std::printf("the ceiling at this shape: %s, %.3fx the call the bars are fractions of\n",
              all[timed[fastest]].name.c_str(), stats[0].median_ms / stats[fastest].median_ms);
  return ok;
}

}  // namespace ch09
