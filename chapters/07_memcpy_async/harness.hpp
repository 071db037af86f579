// Chapter 07 — what the program (main.cu) and the tests (tests/test_07_memcpy_async.cpp)
// share: the variants as a table (name, function, kernel, step), the array's contents and
// their upload, the CPU reference of the partial sums and its comparison that names the
// block and its tiles, and the sizes and grids every variant is checked on. Host code only.
#pragma once

#include "memcpy_async.cuh"

#include "cml/buffers.hpp"
#include "cml/errors.hpp"
#include "cml/verify.hpp"

#include <cstdint>
#include <string>
#include <vector>

namespace ch07 {

using SumFn = void (*)(const Job&, cudaStream_t);

// The columns of a variant table, this chapter's and chapter 08's (over its own job):
// --variant's name, what it is, its function and its kernel's name in SASS, the step that
// writes it (0: provided), and whether job.stages matters to it.
template <class JobT>
struct VariantColumns {
  const char* name;
  const char* what;
  void (*fn)(const JobT&, cudaStream_t);
  const char* kernel;
  int step;
  bool staged;
};

// One variant of the chapter.
struct Variant : VariantColumns<Job> {
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

// The array: a hash of the index, so no two nearby words are equal and a word read from
// the wrong tile, the wrong stage or before it landed changes the sums.
inline Word word_at(std::size_t i) {
  std::uint64_t x = (static_cast<std::uint64_t>(i) + 0x9E3779B97F4A7C15ull) * 0xBF58476D1CE4E5B9ull;
  x ^= x >> 31;
  return static_cast<Word>(x ^ (x >> 29));
}
inline std::vector<Word> make_input(std::size_t n) {
  std::vector<Word> in(n);
  for (std::size_t i = 0; i < n; ++i) in[i] = word_at(i);
  return in;
}

// `host` in device memory of `words` words (>= host.size(); any beyond it unwritten).
inline cml::DeviceBuffer<Word> to_device(const std::vector<Word>& host, std::size_t words) {
  cml::DeviceBuffer<Word> d(words);
  if (!host.empty()) CUDA_CHECK(cudaMemcpy(d.data(), host.data(), host.size() * sizeof(Word), cudaMemcpyHostToDevice));
  CUDA_CHECK(cudaDeviceSynchronize());  // lands before a kernel on a non-blocking stream
  return d;
}

// The partial sums memcpy_async.cuh promises: block b sums work(w, compute) over the words
// of tiles b, b + blocks, b + 2 blocks, ...
inline std::vector<Word> reference_partials(const std::vector<Word>& in, int blocks, int compute) {
  std::vector<Word> partial(static_cast<std::size_t>(blocks), 0u);
  for (std::size_t i = 0; i < in.size(); ++i)
    partial[(i / kTileWords) % static_cast<std::size_t>(blocks)] += work(in[i], compute);
  return partial;
}

// got against want; a mismatch names the block, how many tiles it had, and whether it is
// the block of the short last tile.
inline cml::VerifyResult check_partials(const std::vector<Word>& got, const std::vector<Word>& want, std::size_t n) {
  auto v = cml::compare_exact(got.data(), want.data(), got.size());
  if (!v.ok) {
    const std::size_t b = v.first_bad, blocks = got.size(), tiles = tile_count(n);
    const std::size_t mine = tiles > b ? (tiles - b + blocks - 1) / blocks : 0;
    const bool last = tiles > 0 && (tiles - 1) % blocks == b && n % kTileWords != 0;
    v.want += " (the sum of block " + std::to_string(b) + ", over its " + std::to_string(mine) + " tile(s)" +
              (last ? ", the short last tile among them" : "") + ")";
  }
  return v;
}

// The shapes of a check: n words (0, shorter than a tile, not multiples of 4, of the tile or
// of the stages' tile counts) on a grid of `blocks`, so that blocks own 0, 1 or many tiles.
struct Case {
  std::size_t n;
  int blocks;
  const char* what;
};
inline const std::vector<Case>& checked_cases() {
  static const std::vector<Case> c = {
      {0, 3, "empty"},
      {1, 1, "one word"},
      {1023, 2, "one short tile, n % 4 == 3"},
      {1025, 1, "a tile and a word"},
      {5 * kTileWords + 6, 2, "5 tiles + 6 words on 2 blocks"},
      {7 * kTileWords + 1, 3, "7 tiles + 1 word on 3 blocks"},
      {13 * kTileWords + 2, 2, "13 tiles + 2 words on 2 blocks (not a multiple of 2, 3 or 4 tiles each)"},
      {11 * kTileWords, 16, "11 tiles on 16 blocks (some with none)"},
      {(1u << 20) + 3, 37, "1 Mi words + 3 on 37 blocks"},
      {(5u << 20) + 1001, 264, "5 Mi words + 1001 on 264 blocks"},
  };
  return c;
}

// j with the fields every job of this chapter and chapter 08 has, Job and MatrixJob alike:
// where the sums go, the grid, the work per word, the stages.
template <class JobT>
JobT with_grid(JobT j, Word* partial, int blocks, int compute, int stages) {
  j.partial = partial;
  j.blocks = blocks;
  j.compute = compute;
  j.stages = stages;
  return j;
}

// A job over `n` words of `in`, its sums into `partial`: what every caller fills alike.
inline Job make_job(const Word* in, std::size_t n, Word* partial, int blocks, int compute, int stages) {
  Job j;
  j.in = in;
  j.n = n;
  return with_grid(j, partial, blocks, compute, stages);
}

}  // namespace ch07
