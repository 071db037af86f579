// Chapter 08 — what the program (main.cu and its modes) and the tests
// (tests/test_08_cp_async_ptx.cpp) share: the pipelines as a table, the tile copy's
// widths, the matrices of step 5 with their CPU reference, the experiment's expected
// answer, and the mbarrier wait report in words. Host code only; the tiled sum
// (cml/tile_sum.cuh) gives the array, its reference sums and the checked sizes.
#pragma once

#include "cp_async_ptx.cuh"

#include "cml/tile_sum.cuh"

#include "cml/buffers.hpp"
#include "cml/errors.hpp"
#include "cml/verify.hpp"

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

namespace ch08 {

// The workload's host side, this chapter's too: Case, checked_cases, make_input, to_device,
// reference_partials, check_partials, word_at.
using namespace cml::tile_sum;

// ---- The 1D pipelines -------------------------------------------------------------------

using SumFn = void (*)(const Job&, cudaStream_t);

// One pipeline over the chapter's job: the workload's columns (step 0: provided), and
// whether it needs compute capability 9.0.
struct Variant : cml::tile_sum::VariantColumns<Job> {
  bool sm90;
};

inline const std::vector<Variant>& variants() {
  static const std::vector<Variant> v = {
      {"sync", "register staging (provided)", sum_sync, "ch08::sum_sync_kernel", 0, false, false},
      {"pipeline", "cp.async.ca 4 bytes, commit/wait groups (step 2)", sum_pipeline, "ch08::sum_pipeline_kernel<", 2,
       true, false},
      {"fast", "cp.async.cg 16 bytes, zero-filled tail (step 3)", sum_fast, "ch08::sum_fast_kernel<", 3, true, false},
      {"bulk", "cp.async.bulk per tile on an mbarrier (step 4, sm_90)", sum_bulk, "ch08::sum_bulk_kernel<", 4, true,
       true},
  };
  return v;
}

// The lengths every pipeline is checked on: first some that end on a 16-byte piece (so a
// failure that only ragged ends show is the tail's), with blocks owning several tiles and
// tile counts that are not multiples of the stages; then the workload's, which end inside a
// piece, inside a tile, or give blocks no tile at all.
inline const std::vector<Case>& sum_cases() {
  static const std::vector<Case> c = [] {
    std::vector<Case> all = {
        {4, 1, "one 16-byte piece"},
        {3 * kTileWords, 1, "3 whole tiles on 1 block"},
        {13 * kTileWords + 8, 2, "13 tiles + 8 words on 2 blocks (7 and 6 tiles: not multiples of 2, 3 or 4)"},
        {1u << 20, 37, "1 Mi words on 37 blocks"},
    };
    for (const auto& k : checked_cases()) all.push_back(k);
    return all;
  }();
  return c;
}

// The tiled sum's job, with the report a bounded wait writes to.
inline Job make_job(const Word* in, std::size_t n, Word* partial, int blocks, int compute, int stages,
                    Report* report = nullptr) {
  Job j;
  static_cast<cml::tile_sum::Job&>(j) = cml::tile_sum::make_job(in, n, partial, blocks, compute, stages);
  j.report = report;
  return j;
}

// ---- The wait report --------------------------------------------------------------------

// A Report in device memory, zeroed, with the time limit a wait may take.
class DeviceReport {
 public:
  explicit DeviceReport(unsigned long long limit_ns = 0) : limit_ns_(limit_ns) { reset(); }
  Report* get() const { return buf_.data(); }
  void reset() {
    Report r;
    r.limit_ns = limit_ns_;
    cml::upload(buf_.data(), &r, 1);
  }
  Report read() const {
    Report r;
    CUDA_CHECK(cudaMemcpy(&r, buf_.data(), sizeof r, cudaMemcpyDeviceToHost));
    return r;
  }

 private:
  cml::DeviceBuffer<Report> buf_{1};
  unsigned long long limit_ns_;
};

// "" when no wait gave up; else what happened, in words.
inline std::string describe(const Report& r) {
  if (r.stalled == 0) return "";
  char text[320];
  std::snprintf(text, sizeof text,
                "an mbarrier phase never completed: thread %u of block %u gave up after %.1f s waiting for the phase "
                "of parity %u of stage %u's barrier",
                r.thread, r.block, static_cast<double>(r.waited_ns) * 1e-9, r.parity, r.stage);
  return text;
}

// ---- Step 1: the tile copy and the experiment ----------------------------------------------

// One width and cache level of the tile copy: its kernel and the SASS copy instruction it
// must compile to (ZFILL: the form with a src-size operand).
struct CopyKind {
  int bytes;
  Cache cache;
  const char* name;  // as --mode=copy prints it
  const char* kernel;
  const char* opcode;  // exactly this LDGSTS (any .ZFILL suffix aside)
};
inline const std::vector<CopyKind>& copy_kinds() {
  static const std::vector<CopyKind> k = {
      {4, Cache::ca, "cp.async.ca, 4 bytes", "copy_tiles_ca4_kernel", "LDGSTS.E"},
      {8, Cache::ca, "cp.async.ca, 8 bytes", "copy_tiles_ca8_kernel", "LDGSTS.E.64"},
      {16, Cache::ca, "cp.async.ca, 16 bytes", "copy_tiles_ca16_kernel", "LDGSTS.E.128"},
      {16, Cache::cg, "cp.async.cg, 16 bytes", "copy_tiles_cg16_kernel", "LDGSTS.E.BYPASS.128"},
  };
  return k;
}

// The copy's lengths: ends inside a 4-, 8- and 16-byte piece, inside and at the end of a
// tile, on grids where blocks have 0, 1 or many tiles.
inline const std::vector<Case>& copy_cases() {
  static const std::vector<Case> c = {
      {0, 2, "empty"},
      {1, 1, "one word: 3 bytes of a 16-byte piece zero-filled"},
      {2, 1, "two words"},
      {3, 2, "three words"},
      {1023, 2, "one short tile"},
      {1024, 1, "one whole tile"},
      {5 * kTileWords + 6, 3, "5 tiles + 6 words on 3 blocks"},
      {7 * kTileWords + 1, 37, "7 tiles + 1 word on 37 blocks (most with none)"},
      {(1u << 20) + 3, 37, "1 Mi words + 3 on 37 blocks"},
  };
  return c;
}

// What copy_tiles must leave in `out`: in, then zeros to the end of the last tile.
inline std::vector<Word> padded_copy(const std::vector<Word>& in) {
  std::vector<Word> out(tile_count(in.size()) * kTileWords, 0u);
  for (std::size_t i = 0; i < in.size(); ++i) out[i] = in[i];
  return out;
}

// got against padded_copy(in); a mismatch past the array says it is the zero fill.
inline cml::VerifyResult check_copy(const std::vector<Word>& got, const std::vector<Word>& want, std::size_t n) {
  auto v = cml::compare_exact(got.data(), want.data(), got.size());
  if (!v.ok && v.first_bad >= n)
    v.want += " (word " + std::to_string(v.first_bad) + " is past the array's " + std::to_string(n) +
              " words: the bytes a copy does not read from the source must land as zeros)";
  return v;
}

// The experiment's a[i] = i, and what each reading must give.
inline std::vector<int> experiment_input(int threads) {
  std::vector<int> a(static_cast<std::size_t>(threads));
  for (int i = 0; i < threads; ++i) a[static_cast<std::size_t>(i)] = i;
  return a;
}
inline std::vector<int> experiment_expected(Reverse how, int threads) {
  std::vector<int> b(static_cast<std::size_t>(threads));
  for (int t = 0; t < threads; ++t) {
    const int element = how == Reverse::own ? t : (t + 32) % threads;  // the shared element thread t reads
    b[static_cast<std::size_t>(t)] = threads - 1 - element;            // which holds a[threads - 1 - element]
  }
  return b;
}

// ---- Step 5: matrices ---------------------------------------------------------------------

// What a pitched row holds past its last column: a kernel that reads it gets wrong sums.
inline constexpr Word kPadding = 0xDEADBEEFu;

struct HostMatrix {
  std::size_t rows = 0, cols = 0, pitch = 0;
  std::vector<Word> data;  // rows * pitch words
};

// Word (r, c) is word_at(r * cols + c): the same values as the 1D array of rows * cols words.
inline HostMatrix make_matrix(std::size_t rows, std::size_t cols, std::size_t pitch) {
  HostMatrix m{rows, cols, pitch, std::vector<Word>(rows * pitch, kPadding)};
  for (std::size_t r = 0; r < rows; ++r)
    for (std::size_t c = 0; c < cols; ++c) m.data[r * pitch + c] = word_at(r * cols + c);
  return m;
}

// The matrix on the device, as `Matrix` describes it.
struct DeviceMatrix {
  cml::DeviceBuffer<Word> words;
  Matrix view;
  explicit DeviceMatrix(const HostMatrix& h) : words(h.data.empty() ? 1 : h.data.size()) {
    cml::upload(words.data(), h.data.data(), h.data.size());
    view.data = words.data();
    view.rows = h.rows;
    view.cols = h.cols;
    view.pitch = h.pitch;
  }
};

// Block b's sum of work(w, compute) over the words inside the matrix of boxes b, b + blocks,
// ..., for boxes of box_rows rows.
inline std::vector<Word> reference_box_partials(const HostMatrix& m, int blocks, int compute, int box_rows) {
  std::vector<Word> partial(static_cast<std::size_t>(blocks), 0u);
  const std::size_t across = (m.cols + kBoxCols - 1) / kBoxCols, high = static_cast<std::size_t>(box_rows);
  for (std::size_t r = 0; r < m.rows; ++r)
    for (std::size_t c = 0; c < m.cols; ++c)
      partial[((r / high) * across + c / kBoxCols) % static_cast<std::size_t>(blocks)] +=
          work(m.data[r * m.pitch + c], compute);
  return partial;
}

// got against want; a mismatch names the block, its boxes and whether they reach an edge.
inline cml::VerifyResult check_box_partials(const std::vector<Word>& got, const std::vector<Word>& want,
                                            const HostMatrix& m, int box_rows) {
  auto v = cml::compare_exact(got.data(), want.data(), got.size());
  if (!v.ok) {
    Matrix shape;
    shape.rows = m.rows;
    shape.cols = m.cols;
    const std::size_t boxes = box_count(shape, box_rows), blocks = got.size(), b = v.first_bad;
    const std::size_t mine = boxes > b ? (boxes - b + blocks - 1) / blocks : 0;
    v.want += " (the sum of block " + std::to_string(b) + ", over its " + std::to_string(mine) + " box(es) of " +
              std::to_string(box_rows) + " x " + std::to_string(kBoxCols) + " words in a " + std::to_string(m.rows) +
              " x " + std::to_string(m.cols) + " matrix" +
              (m.rows % static_cast<std::size_t>(box_rows) != 0 || m.cols % kBoxCols != 0
                   ? ", whose edge boxes stick out of it"
                   : "") +
              ")";
  }
  return v;
}

struct MatrixCase {
  std::size_t rows, cols, pitch;
  int blocks;
  const char* what;
};
// Matrices whose boxes all lie inside first for boxes of up to 64 rows of 256 words (a
// failure only the others show is at the edges), then edges at the bottom, at the right and
// both, pitched rows of 8191 words.
inline const std::vector<MatrixCase>& matrix_cases() {
  static const std::vector<MatrixCase> c = {
      {4, 256, 256, 1, "4 x 256: one box, or part of one"},
      {128, 1024, 1024, 3, "128 x 1024 on 3 blocks"},
      {64, 2048, 2048, 16, "64 x 2048 on 16 blocks"},
      {0, 8191, 8192, 2, "no rows"},
      {1, 1, 4, 1, "one word (pitch 4: 16 bytes)"},
      {3, 8191, 8192, 2,
       "3 rows of 8191 words, pitched to 8192: every box sticks out at the bottom, the last one "
       "at the right too"},
      {9, 257, 260, 3, "9 x 257, pitch 260: edge boxes of one column and one row"},
      {1, 1000, 1000, 2, "one row: boxes with 3 rows out of bounds"},
      {130, 1024, 1024, 16, "130 x 1024 on 16 blocks"},
      {1001, 8191, 8192, 37, "1001 x 8191, pitched to 8192, on 37 blocks"},
      {2049, 513, 516, 264, "2049 x 513 on 264 blocks (some with one box, some with none)"},
  };
  return c;
}

inline MatrixJob make_matrix_job(const Matrix& in, Word* partial, int blocks, int compute, int stages,
                                 Report* report = nullptr) {
  MatrixJob j;
  j.in = in;
  j.report = report;
  return cml::tile_sum::with_grid(j, partial, blocks, compute, stages);
}

}  // namespace ch08
