// Chapter 07 — what the program (main.cu) and the tests (tests/test_07_memcpy_async.cpp)
// share: the variants as a table (name, function, kernel, step). The array's contents, the
// CPU reference of the partial sums, its comparison that names the block and its tiles,
// and the sizes every variant is checked on are the workload's (cml/tile_sum.cuh), shared
// with chapter 08. Host code only.
#pragma once

#include "memcpy_async.cuh"

#include "cml/tile_sum.cuh"

#include <vector>

namespace ch07 {

// The workload's host side, this chapter's too: Case, checked_cases, make_input, make_job,
// to_device, reference_partials, check_partials, word_at.
using namespace cml::tile_sum;

using SumFn = void (*)(const Job&, cudaStream_t);

// One variant of the chapter.
struct Variant : cml::tile_sum::VariantColumns<Job> {
  int fixed_stages;  // 1 for pipeline1; 0: --stages
};

inline const std::vector<Variant>& variants() {
  static const std::vector<Variant> v = {
      {"sync", "register-staged (provided)", sum_sync, "sum_sync_kernel", 0, false, 0},
      {"cg", "cg::memcpy_async + cg::wait (step 1)", sum_cg, "sum_cg_kernel", 1, false, 0},
      {"barrier", "cuda::memcpy_async + cuda::barrier (step 2)", sum_barrier, "sum_barrier_kernel", 2, false, 0},
      {"pipeline1", "cuda::pipeline, one stage (step 3)", sum_pipeline, "sum_pipeline_kernel", 3, true, 1},
      {"pipelineN", "cuda::pipeline, --stages stages (step 3)", sum_pipeline, "sum_pipeline_kernel", 3, true, 0},
      {"fast", "pipeline, 16-byte copies (step 4)", sum_fast, "sum_fast_kernel", 4, true, 0},
  };
  return v;
}

}  // namespace ch07
