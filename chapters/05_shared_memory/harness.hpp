// Chapter 05 — what the program (main.cu) and the tests (tests/test_05_shared_memory.cpp)
// share: the shapes every transpose is checked on, the CPU reference, the access-width
// experiments with the bank model's prediction for each, and the Nsight Compute metrics
// that measure them. Host code only.
#pragma once

#include "shared_memory.cuh"

#include "cml/banks.hpp"
#include "cml/verify.hpp"

#include <array>
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

namespace ch05 {

// ---- Shapes and the reference ------------------------------------------------------------

using Shape = cml::MatrixShape;

// Square, non-square both ways (a row/column mix-up shows only there), ragged (not a
// multiple of the tile: edge tiles are partial), and thin.
inline const std::vector<Shape>& checked_shapes() {
  static const std::vector<Shape> shapes = {
      {1024, 1024, "square"},          {512, 2048, "wide"},         {2048, 512, "tall"}, {1000, 1000, "square, ragged"},
      {333, 1037, "wide, ragged"},     {1037, 333, "tall, ragged"}, {1, 77, "one row"},  {77, 1, "one column"},
      {31, 33, "smaller than a tile"},
  };
  return shapes;
}

// Step 4 takes rows and cols that are multiples of 4 only.
inline const std::vector<Shape>& checked_shapes_wide() {
  static const std::vector<Shape> shapes = {
      {1024, 1024, "square"},         {512, 2048, "wide"},         {2048, 512, "tall"},
      {1000, 1000, "square, ragged"}, {332, 1036, "wide, ragged"}, {1036, 332, "tall, ragged"},
      {4, 76, "four rows"},           {76, 4, "four columns"},     {36, 28, "smaller than a tile"},
  };
  return shapes;
}

// A pattern in which no element equals another nearby, exact in float (integers < 2^24).
inline float element_value(std::size_t i) { return static_cast<float>((i * 7919u) % 16777213u); }

// Compares out (cols x rows) with the transpose of the matrix element_value(r * cols + c),
// naming the first wrong element by its place in both matrices.
inline cml::VerifyResult check_transpose(const std::vector<float>& out, int rows, int cols) {
  std::vector<float> want(out.size());
  for (int r = 0; r < rows; ++r)
    for (int c = 0; c < cols; ++c)
      want[static_cast<std::size_t>(c) * rows + r] = element_value(static_cast<std::size_t>(r) * cols + c);
  auto v = cml::compare_exact(out.data(), want.data(), out.size());
  if (!v.ok) {
    const std::size_t i = v.first_bad;
    v.want += " = in[row " + std::to_string(i % rows) + "][col " + std::to_string(i / rows) + "], at out[row " +
              std::to_string(i / rows) + "][col " + std::to_string(i % rows) + "]";
  }
  return v;
}

// ---- The access-width experiments --------------------------------------------------------

struct Experiment {
  const char* name;  // also the row's label in tables and test messages
  bool store;
  unsigned width;  // bytes per lane
  std::uint32_t active;
  std::array<unsigned, 32> element;  // lane l touches element element[l] of width-byte elements
  const char* shows;                 // the rule it exercises
  cml::SharedAccess access() const {
    cml::SharedAccess a;
    a.width = width;
    a.active = active;
    a.store = store;
    for (unsigned l = 0; l < 32; ++l) a.address[l] = element[l] * width;
    return a;
  }
  cml::BankCount model() const { return cml::count_banks(access()); }
};

namespace detail {
template <typename F>
std::array<unsigned, 32> lanes(F f) {
  std::array<unsigned, 32> e{};
  for (unsigned l = 0; l < 32; ++l) e[l] = f(l);
  return e;
}
}  // namespace detail

// The experiments of the LDS-width notes and the chapter's own, in the order the profile
// target launches them. The notes (NVIDIA forum answers and ncu experiments, summarised in
// docs/05_shared_memory.md, "Wider accesses: 8 and 16 bytes per thread") ran five LDS.64
// kernels, one warp each, here "notes t1" to "notes t5": lanes 0-15 only; lanes 0-14 and 16
// (lane 16 at element 15); lanes i and i^1 at one element; i and i^1 at one element in the
// first half-warp, i and i^2 in the second; lanes i and i+16 at one element.
inline const std::vector<Experiment>& experiments() {
  using detail::lanes;
  constexpr std::uint32_t all = 0xffffffffu;
  static const std::vector<Experiment> list = {
      {"LDS.32 consecutive", false, 4, all, lanes([](unsigned l) { return l; }), "one word per bank"},
      {"LDS.32 stride 2", false, 4, all, lanes([](unsigned l) { return 2 * l; }), "2-way conflict"},
      {"LDS.32 stride 32 (tile column)", false, 4, all, lanes([](unsigned l) { return 32 * l; }), "32-way conflict"},
      {"LDS.32 stride 33 (padded column)", false, 4, all, lanes([](unsigned l) { return 33 * l; }), "padding"},
      {"LDS.32 swizzled column", false, 4, all, lanes([](unsigned l) { return 32 * l + (5 ^ l); }), "XOR swizzle"},
      {"LDS.32 broadcast", false, 4, all, lanes([](unsigned) { return 7u; }), "one word for all"},
      {"LDS.32 multicast, 2 words of a bank", false, 4, all, lanes([](unsigned l) { return (l % 2) * 32; }),
       "2 words in one bank: 2-way"},
      {"LDS.64 consecutive", false, 8, all, lanes([](unsigned l) { return l; }), "per half-warp"},
      {"LDS.64 stride 2", false, 8, all, lanes([](unsigned l) { return 2 * l; }), "2-way in each half"},
      {"LDS.64 notes t1: lanes 0-15", false, 8, 0x0000ffffu, lanes([](unsigned l) { return l; }), "an idle half"},
      {"LDS.64 notes t2: lanes 0-14, 16", false, 8, 0x00017fffu, lanes([](unsigned l) { return l == 16 ? 15u : l; }),
       "no rule holds"},
      {"LDS.64 notes t3: i, i^1 same", false, 8, all, lanes([](unsigned l) { return l / 2; }), "merge by i^1"},
      {"LDS.64 i, i^2 same", false, 8, all, lanes([](unsigned l) { return (l / 4) * 2 + l % 2; }), "merge by i^2"},
      {"LDS.64 notes t4: halves differ", false, 8, all,
       lanes([](unsigned l) { return l < 16 ? l >> 1 : 8u + (l & 1u) + (((l >> 2) - 4u) << 1); }),
       "one rule per half: no merge"},
      {"LDS.64 notes t5: i, i+16 same", false, 8, all, lanes([](unsigned l) { return l % 16; }), "no merge"},
      {"LDS.128 consecutive", false, 16, all, lanes([](unsigned l) { return l; }), "per quarter-warp"},
      {"LDS.128 quarters 0-1 paired", false, 16, 0x0000ffffu, lanes([](unsigned l) { return l / 2; }), "merge"},
      {"LDS.128 quarters 1-2 paired", false, 16, 0x00ffff00u, lanes([](unsigned l) { return l / 2; }),
       "across halves: no merge"},
      {"LDS.128 halves by different rules", false, 16, all,
       lanes([](unsigned l) { return l < 16 ? l / 2 : 8u + (l / 4 - 4u) * 2 + l % 2; }), "no merge"},
      {"LDS.128 all paired", false, 16, all, lanes([](unsigned l) { return l / 2; }), "no cascading"},
      {"LDS.128 broadcast", false, 16, all, lanes([](unsigned) { return 3u; }), "no cascading"},
      {"LDS.128 column, 8 per row", false, 16, all, lanes([](unsigned l) { return 8 * l; }), "8-way per quarter"},
      {"LDS.128 column, 9 per row", false, 16, all, lanes([](unsigned l) { return 9 * l; }), "padded by a float4"},
      {"STS.32 consecutive", true, 4, all, lanes([](unsigned l) { return l; }), "stores: one word per bank"},
      {"STS.32 stride 32", true, 4, all, lanes([](unsigned l) { return 32 * l; }), "stores: 32-way"},
      {"STS.32 same word", true, 4, all, lanes([](unsigned) { return 9u; }), "stores: one word"},
      {"STS.64 consecutive", true, 8, all, lanes([](unsigned l) { return l; }), "stores: per half-warp"},
      {"STS.64 i, i^1 same", true, 8, all, lanes([](unsigned l) { return l / 2; }), "stores: no merge (model)"},
      {"STS.128 consecutive", true, 16, all, lanes([](unsigned l) { return l; }), "stores: per quarter-warp"},
      {"STS.128 all paired", true, 16, all, lanes([](unsigned l) { return l / 2; }), "stores: no merge (model)"},
      {"STS.128 column, 8 per row", true, 16, all, lanes([](unsigned l) { return 8 * l; }), "stores: 8-way"},
  };
  return list;
}

// ---- The tile transposes under the model -------------------------------------------------

// The bank model of a tile transpose with the header's mapping (32 x 8 threads over a
// side x side tile: thread (x, y) stores tile[y + 8k][x + 32h] and loads tile[x + 32h][y + 8k]),
// a tile row pitch of `pitch` floats and, if `swizzle`, column index col ^ (row % 32): the
// shared stores and loads of every warp of the kernel over a rows x cols matrix.
struct TileModel {
  cml::BankCount stores, loads;
};
inline void add_count(cml::BankCount& to, const cml::BankCount& c) {
  to.transactions += c.transactions;
  to.wavefronts += c.wavefronts;
  to.conflicts += c.conflicts;
}
inline TileModel tile_transpose_model(int rows, int cols, int side, int pitch, bool swizzle) {
  TileModel m;
  const auto at = [&](int r, int c) {
    return static_cast<std::uint32_t>((r * pitch + (swizzle ? (c ^ (r % kTile)) : c)) * 4);
  };
  for (int by = 0; by * side < rows; ++by)
    for (int bx = 0; bx * side < cols; ++bx)
      for (int ty = 0; ty < kBlockRows; ++ty)
        for (int h = 0; h < side / kTile; ++h)
          for (int k = 0; k < side; k += kBlockRows) {
            cml::SharedAccess st, ld;
            st.active = ld.active = 0;
            st.store = true;
            for (int x = 0; x < 32; ++x) {
              const int tr = ty + k, tc = x + h * kTile;  // stored: tile[tr][tc]; loaded: tile[tc][tr]
              if (by * side + tr < rows && bx * side + tc < cols) st.active |= 1u << x;
              st.address[x] = at(tr, tc);
              if (bx * side + tr < cols && by * side + tc < rows) ld.active |= 1u << x;
              ld.address[x] = at(tc, tr);
            }
            add_count(m.stores, cml::count_banks(st));
            add_count(m.loads, cml::count_banks(ld));
          }
  return m;
}

// The tile's side and pitch from a step 1-3 kernel's static shared memory (ncu's
// launch__shared_mem_per_block_static, which may be rounded to 3 digits): a side x pitch
// float tile with side 32 or 64 and pitch side or side + 1. False when it is none of those.
inline bool tile_from_static_shared(double bytes, int& side, int& pitch) {
  for (const int s : {32, 64})
    for (const int p : {s, s + 1})
      if (bytes == 4.0 * s * p) {  // ncu's base units: bytes, exactly
        side = s;
        pitch = p;
        return true;
      }
  return false;
}

// The model of the solution's 16-byte transpose (step 4): a 64 x 64 float tile held as 64
// rows of 16 float4, float4 column v of row r stored at v ^ ((r / 4) % 8), 256 threads.
// Read phase: thread t stores row t / 16 + 16 i, float4 column t % 16 (i < 4). Write phase:
// a = t % 16, b = t / 16 loads rows 4a + j (j < 4) at float4 column b. Edges as the
// solution's: rows and cols multiples of 4. A learner's other layout has another model.
inline TileModel wide_transpose_model(int rows, int cols, bool swizzle = true) {
  constexpr int side = 64, vecs = side / 4, threads = 256;
  TileModel m;
  const auto at = [&](int r, int v) {
    return static_cast<std::uint32_t>((r * vecs + (swizzle ? (v ^ ((r / 4) % 8)) : v)) * 16);
  };
  for (int by = 0; by * side < rows; ++by)
    for (int bx = 0; bx * side < cols; ++bx)
      for (int w = 0; w < threads / 32; ++w) {
        for (int i = 0; i < side / (threads / vecs); ++i) {
          cml::SharedAccess st;
          st.width = 16;
          st.store = true;
          st.active = 0;
          for (int l = 0; l < 32; ++l) {
            const int t = 32 * w + l, r = t / vecs + i * (threads / vecs), v = t % vecs;
            if (by * side + r < rows && bx * side + 4 * v < cols) st.active |= 1u << l;
            st.address[l] = at(r, v);
          }
          add_count(m.stores, cml::count_banks(st));
        }
        for (int j = 0; j < 4; ++j) {
          cml::SharedAccess ld;
          ld.width = 16;
          ld.active = 0;
          for (int l = 0; l < 32; ++l) {
            const int t = 32 * w + l, a = t % vecs, b = t / vecs;
            if (by * side + 4 * a < rows && bx * side + 4 * b < cols) ld.active |= 1u << l;
            ld.address[l] = at(4 * a + j, b);
          }
          add_count(m.loads, cml::count_banks(ld));
        }
      }
  return m;
}

// ---- Nsight Compute ----------------------------------------------------------------------

// The counters the program's --mode=profile and the tests read, in MetricIndex order: the
// shared accesses and their conflicts, then the global accesses' sectors per request.
inline const std::vector<std::string>& transpose_metrics() {
  static const std::vector<std::string> m = {
      "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum",
      "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum",
      "smsp__sass_inst_executed_op_shared_ld.sum",
      "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_st.sum",
      "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum",
      "smsp__sass_inst_executed_op_shared_st.sum",
      "launch__shared_mem_per_block_static",
      "l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum",
      "l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum",
      "l1tex__t_sectors_pipe_lsu_mem_global_op_st.sum",
      "l1tex__t_requests_pipe_lsu_mem_global_op_st.sum",
  };
  return m;
}
// Wavefronts ncu counts as conflicts in a whole kernel whose every access is conflict-free,
// as a share of its shared instructions. With one warp (the experiments) ncu and the model
// agree exactly; with thousands of warps in flight ncu adds a few stray ones: 14 to 69 per
// 34,048 loads (0.04-0.2 %) for the padded and swizzled transposes on an H100
// (docs/05_shared_memory.md, "Bank conflicts: the model against ncu for whole kernels"). A
// real conflict costs at least one extra wavefront per instruction (100 %), so 2 % tells
// them apart.
inline constexpr double kStrayConflictShare = 0.02;

// Whether ncu's figure for a whole kernel matches the model's, up to those stray wavefronts.
inline bool within_stray(double measured, double modelled, double instructions) {
  return measured >= modelled && measured - modelled <= kStrayConflictShare * instructions;
}

enum MetricIndex {
  kLdWavefronts,
  kLdConflicts,
  kLdInst,
  kStWavefronts,
  kStConflicts,
  kStInst,
  kStaticShared,
  kGlobalLdSectors,
  kGlobalLdRequests,
  kGlobalStSectors,
  kGlobalStRequests,
};

// The kernels a profile run names, as a regular expression for ncu's --kernel-name.
inline const char* profiled_kernels() { return "shared_load_experiment|shared_store_experiment|transpose_|copy_tiles"; }

// The shape the profile runs transpose: ragged on both sides, so edge tiles count too.
inline constexpr Shape kProfileShape{1000, 1064, "profile"};

}  // namespace ch05
