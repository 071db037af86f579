// The bank model against cases worked by hand: Best Practices Guide §9.2.2.1 (banks,
// broadcast) and the course's source notes on LDS widths (a 64-bit access served per
// half-warp, a 128-bit one per quarter-warp, the i^1 and i^2 merge rules, and their ncu
// experiments smem_t1..t5). Where a case is the notes' own, its name says so.
#include "catch.hpp"

#include "cml/banks.hpp"

#include <stdexcept>

namespace {
constexpr std::uint32_t kAll = 0xffffffffu;

cml::BankCount count(unsigned width, std::uint32_t (*element)(unsigned), std::uint32_t active = kAll) {
  return cml::count_banks(cml::element_access(width, element, active));
}
}  // namespace

TEST_CASE("a warp of consecutive 4-byte words is one conflict-free wavefront", "[cpu][banks]") {
  const auto c = count(4, [](unsigned l) { return l; });
  CHECK(c.transactions == 1);
  CHECK(c.wavefronts == 1);
  CHECK(c.conflicts == 0);
  CHECK(c.ways == 1);
  CHECK_FALSE(c.merged);
  CHECK(cml::describe(c) == "1 transaction, 1 wavefront, 0 conflicts");
}

TEST_CASE("a stride of s words conflicts gcd(s, 32)-way", "[cpu][banks]") {
  const auto two = count(4, [](unsigned l) { return 2 * l; });
  CHECK(two.wavefronts == 2);
  CHECK(two.conflicts == 1);
  CHECK(two.ways == 2);
  CHECK(count(4, [](unsigned l) { return 4 * l; }).wavefronts == 4);
  CHECK(count(4, [](unsigned l) { return 3 * l; }).wavefronts == 1);  // odd strides visit every bank
  const auto column = count(4, [](unsigned l) { return 32 * l; });    // a 32-float tile's column
  CHECK(column.wavefronts == 32);
  CHECK(column.conflicts == 31);
  CHECK(column.detail.at(0).worst_bank == 0);
  CHECK(cml::describe(column) == "1 transaction, 32 wavefronts, 31 conflicts (32-way)");
}

TEST_CASE("a tile's column read is conflict-free once padded by one word or swizzled", "[cpu][banks]") {
  for (std::uint32_t c = 0; c < 32; ++c) {
    const auto padded = cml::count_banks(cml::element_access(4, [c](unsigned l) { return l * 33 + c; }));
    CHECK(padded.wavefronts == 1);
    const auto swizzled = cml::count_banks(cml::element_access(4, [c](unsigned l) { return l * 32 + (c ^ l); }));
    CHECK(swizzled.wavefronts == 1);
  }
  // The swizzled rows are still conflict-free (a row read is a permutation of the banks).
  CHECK(cml::count_banks(cml::element_access(4, [](unsigned l) { return 5 * 32 + (l ^ 5u); })).wavefronts == 1);
}

TEST_CASE("threads reading one word get a broadcast, several words a multicast", "[cpu][banks]") {
  CHECK(count(4, [](unsigned) { return 7u; }).wavefronts == 1);
  CHECK(count(4, [](unsigned l) { return l / 4; }).wavefronts == 1);  // 8 words, 4 readers each
  // Two words of one bank, each read by 16 threads: 2-way, however many readers.
  const auto two = count(4, [](unsigned l) { return (l % 2) * 32; });
  CHECK(two.wavefronts == 2);
  CHECK(two.conflicts == 1);
  // Bytes and half-words of one word are that word: one read.
  CHECK(count(1, [](unsigned l) { return l % 4; }).wavefronts == 1);
  CHECK(count(2, [](unsigned l) { return l; }).wavefronts == 1);
  CHECK(count(1, [](unsigned l) { return 128 * l; }).wavefronts == 32);  // one byte of bank 0's 32 words
}

TEST_CASE("8-byte accesses are served per half-warp: a warp takes 2 wavefronts and no conflict", "[cpu][banks]") {
  const auto c = count(8, [](unsigned l) { return l; });
  CHECK(c.transactions == 2);
  CHECK(c.wavefronts == 2);
  CHECK(c.conflicts == 0);
  CHECK(c.detail.at(0).lanes == 0x0000ffffu);
  CHECK(c.detail.at(1).lanes == 0xffff0000u);
  // A stride of two elements: each half-warp spans 256 bytes, 2 words per bank.
  const auto strided = count(8, [](unsigned l) { return 2 * l; });
  CHECK(strided.wavefronts == 4);
  CHECK(strided.conflicts == 2);
  CHECK(strided.ways == 2);
}

TEST_CASE("16-byte accesses are served per quarter-warp: 4 wavefronts reported as 0 conflicts", "[cpu][banks]") {
  const auto c = count(16, [](unsigned l) { return l; });
  CHECK(c.transactions == 4);
  CHECK(c.wavefronts == 4);
  CHECK(c.conflicts == 0);
  // What the issue saw on the H200: 8 LDS.64 -> 16 wavefronts, 8 LDS.128 -> 32.
  std::vector<cml::SharedAccess> eight64(8, cml::element_access(8, [](unsigned l) { return l; }));
  std::vector<cml::SharedAccess> eight128(8, cml::element_access(16, [](unsigned l) { return l; }));
  CHECK(cml::count_banks(eight64).wavefronts == 16);
  CHECK(cml::count_banks(eight128).wavefronts == 32);
  CHECK(cml::count_banks(eight128).conflicts == 0);
  // A column of a float4 tile of 8 float4 (128 bytes) per row: each quarter-warp reads 8
  // rows in the same 4 banks, 8-way; padded by one float4 per row it is conflict-free.
  const auto column = count(16, [](unsigned l) { return l * 8; });
  CHECK(column.wavefronts == 4 * 8);
  CHECK(column.conflicts == 4 * 7);
  CHECK(column.ways == 8);
  CHECK(count(16, [](unsigned l) { return l * 9; }).wavefronts == 4);
}

TEST_CASE("notes smem_t1: one active half-warp of 8-byte loads is one wavefront", "[cpu][banks]") {
  const auto c = count(
      8, [](unsigned l) { return l; }, 0x0000ffffu);
  CHECK(c.transactions == 1);
  CHECK(c.wavefronts == 1);
}

TEST_CASE("notes smem_t2: lanes 0-14 and 16 active, 16 reading 15's element, take 2 wavefronts", "[cpu][banks]") {
  const auto c = count(
      8, [](unsigned l) { return l == 16 ? 15u : l; }, 0x00017fffu);
  CHECK(c.transactions == 2);
  CHECK(c.wavefronts == 2);
  CHECK_FALSE(c.merged);
}

TEST_CASE("notes smem_t3: lanes i and i^1 reading one address merge the half-warps", "[cpu][banks]") {
  const auto c = count(8, [](unsigned l) { return l / 2; });
  CHECK(c.transactions == 1);
  CHECK(c.wavefronts == 1);
  CHECK(c.conflicts == 0);
  CHECK(c.merged);
  // The partner i^2 works as well.
  CHECK(count(8, [](unsigned l) { return (l / 4) * 2 + (l % 2); }).transactions == 1);
  // And an inactive partner counts as agreeing: only even lanes active.
  CHECK(count(
            8, [](unsigned l) { return l / 2; }, 0x55555555u)
            .transactions == 1);
}

TEST_CASE("notes smem_t4: halves meeting different partner rules do not merge", "[cpu][banks]") {
  // The notes' index: the first half pairs i with i^1, the second i with i^2.
  const auto c = count(8, [](unsigned l) { return l < 16 ? l >> 1 : 8u + (l & 1u) + (((l >> 2) - 4u) << 1); });
  CHECK(c.transactions == 2);
  CHECK(c.wavefronts == 2);
  CHECK_FALSE(c.merged);
}

TEST_CASE("notes smem_t5: lanes i and i+16 reading one address do not merge", "[cpu][banks]") {
  const auto c = count(8, [](unsigned l) { return l % 16; });
  CHECK(c.transactions == 2);
  CHECK(c.wavefronts == 2);
  CHECK_FALSE(c.merged);
}

TEST_CASE("notes, 16-byte merges: within a half-warp only, by one rule warp-wide, no cascading", "[cpu][banks]") {
  // Pairs (i, i^1) reading one float4.
  const auto pairs = [](unsigned l) { return l / 2; };
  // Quarters 0 and 1 active and paired: one transaction.
  const auto q01 = count(16, pairs, 0x0000ffffu);
  CHECK(q01.transactions == 1);
  CHECK(q01.wavefronts == 1);
  CHECK(q01.merged);
  // Quarters 1 and 2 active and paired: different half-warps, 2 transactions.
  const auto q12 = count(16, pairs, 0x00ffff00u);
  CHECK(q12.transactions == 2);
  CHECK_FALSE(q12.merged);
  // First half paired by i^1, second by i^2: no rule holds warp-wide, 4 transactions.
  const auto mixed = count(16, [](unsigned l) { return l < 16 ? l / 2 : 8u + (l / 4 - 4u) * 2 + (l % 2); });
  CHECK(mixed.transactions == 4);
  CHECK_FALSE(mixed.merged);
  // The whole warp paired: each half merges, the halves do not: 2 transactions.
  const auto all = count(16, pairs);
  CHECK(all.transactions == 2);
  CHECK(all.wavefronts == 2);
  CHECK(all.merged);
  // The whole warp reading one float4: still two (no cascading), each one wavefront.
  const auto one = count(16, [](unsigned) { return 3u; });
  CHECK(one.transactions == 2);
  CHECK(one.wavefronts == 2);
  CHECK(one.conflicts == 0);
}

TEST_CASE("a merged transaction still counts its bank conflicts", "[cpu][banks]") {
  // Pairs share a uint2; the 16 distinct uint2 sit at a stride of 2: 256 bytes, 2-way.
  const auto c = count(8, [](unsigned l) { return (l / 2) * 2; });
  CHECK(c.transactions == 1);
  CHECK(c.wavefronts == 2);
  CHECK(c.conflicts == 1);
}

TEST_CASE("inactive lanes touch nothing", "[cpu][banks]") {
  CHECK(count(
            4, [](unsigned l) { return l; }, 0u)
            .wavefronts == 0);
  CHECK(count(
            4, [](unsigned l) { return l; }, 0u)
            .transactions == 0);
  // The conflicting lanes are inactive: what is left is conflict-free.
  const auto c = count(
      4, [](unsigned l) { return l < 16 ? l : 32u + (l - 16u); }, 0x0000ffffu);
  CHECK(c.wavefronts == 1);
  // A quarter-warp of 16-byte accesses alone: one transaction.
  CHECK(count(
            16, [](unsigned l) { return l; }, 0x0000ff00u)
            .transactions == 1);
}

TEST_CASE("stores use the same banks and split, but never merge", "[cpu][banks]") {
  const auto store = [](unsigned width, std::uint32_t (*element)(unsigned)) {
    return cml::count_banks(cml::element_access(width, element, kAll, 0, true));
  };
  CHECK(store(4, [](unsigned l) { return l * 32; }).wavefronts == 32);
  CHECK(store(4, [](unsigned l) { return l * 33; }).wavefronts == 1);
  CHECK(store(4, [](unsigned) { return 9u; }).wavefronts == 1);  // one word, however many writers
  CHECK(store(16, [](unsigned l) { return l; }).wavefronts == 4);
  // Pairs writing one uint2: a load would merge the halves (1 wavefront), a store does not.
  const auto pairs = store(8, [](unsigned l) { return l / 2; });
  CHECK(pairs.transactions == 2);
  CHECK(pairs.wavefronts == 2);
  CHECK_FALSE(pairs.merged);
  CHECK(count(8, [](unsigned l) { return l / 2; }).wavefronts == 1);
}

TEST_CASE("a misaligned access or an odd width is refused, as the hardware would", "[cpu][banks]") {
  // A float4 tile padded by one float: rows of 33 floats start 4 bytes off a multiple of 16.
  cml::SharedAccess padded_by_a_float;
  padded_by_a_float.width = 16;
  for (unsigned l = 0; l < 32; ++l) padded_by_a_float.address[l] = l * 33 * 4;
  CHECK_THROWS_AS(cml::count_banks(padded_by_a_float), std::invalid_argument);
  cml::SharedAccess a = cml::element_access(16, [](unsigned l) { return l; });
  a.address[3] += 4;
  CHECK_THROWS_AS(cml::count_banks(a), std::invalid_argument);
  a.active &= ~(1u << 3);  // an inactive lane's address does not matter
  CHECK_NOTHROW(cml::count_banks(a));
  cml::SharedAccess b;
  b.width = 12;
  CHECK_THROWS_AS(cml::count_banks(b), std::invalid_argument);
}

// Chapter 05's experiments (chapters/05_shared_memory/harness.hpp) run on the GPU with
// these predictions: each must stay inside the kernel's shared array, keep its vector
// aligned, and predict what its label says.
#include "../../chapters/05_shared_memory/harness.hpp"

TEST_CASE("chapter 05's experiments stay in their shared array and predict what their names say", "[cpu][banks]") {
  for (const auto& e : ch05::experiments()) {
    CAPTURE(e.name);
    for (unsigned l = 0; l < 32; ++l) CHECK((e.element[l] + 1) * e.width <= ch05::kExperimentBytes);
    CHECK_NOTHROW(e.model());
    const std::string name = e.name;
    CHECK(name.rfind(e.store ? "STS." : "LDS.", 0) == 0);
    CHECK(name.find(std::to_string(e.width * 8)) == 4);
  }
  const auto find = [](const std::string& name) {
    for (const auto& e : ch05::experiments())
      if (name == e.name) return e.model();
    FAIL("no experiment " << name);
    return cml::BankCount{};
  };
  CHECK(find("LDS.32 stride 32 (tile column)").wavefronts == 32);
  CHECK(find("LDS.32 swizzled column").wavefronts == 1);
  CHECK(find("LDS.64 notes t3: i, i^1 same").wavefronts == 1);
  CHECK(find("LDS.128 all paired").wavefronts == 2);
}

TEST_CASE("chapter 05's tile transposes: the unpadded tile's column reads are 32-way, padded and swizzled 1",
          "[cpu][banks]") {
  const auto plain = ch05::tile_transpose_model(64, 64, 32, 32, false);
  const auto padded = ch05::tile_transpose_model(64, 64, 32, 33, false);
  const auto swizzled = ch05::tile_transpose_model(64, 64, 32, 32, true);
  const unsigned accesses = 4 * 8 * 4;  // 4 tiles x 8 warps x 4 rows each
  CHECK(plain.stores.wavefronts == accesses);
  CHECK(plain.loads.wavefronts == 32 * accesses);
  CHECK(plain.loads.conflicts == 31 * accesses);
  CHECK(padded.loads.wavefronts == accesses);
  CHECK(padded.stores.conflicts == 0);
  CHECK(swizzled.loads.wavefronts == accesses);
  CHECK(swizzled.stores.conflicts == 0);
  // Ragged: a 40 x 40 matrix has partial tiles; their idle lanes cost nothing, and warps
  // with no row to move issue nothing.
  const auto ragged = ch05::tile_transpose_model(40, 40, 32, 33, false);
  CHECK(ragged.loads.conflicts == 0);
  CHECK(ragged.stores.transactions == 40 + 40);  // one per row of each tile column: 40 rows x 2 tile columns
}

TEST_CASE("chapter 05's 64 x 64 tiles: 16 accesses per thread, the same banks as 32 x 32", "[cpu][banks]") {
  // One 64 x 64 tile: 8 warps x 2 strips x 8 rows = 128 stores and as many loads.
  const unsigned accesses = 8 * 2 * 8;
  const auto plain = ch05::tile_transpose_model(64, 64, 64, 64, false);
  const auto padded = ch05::tile_transpose_model(64, 64, 64, 65, false);
  const auto swizzled = ch05::tile_transpose_model(64, 64, 64, 64, true);
  const auto pad_row = ch05::tile_transpose_model(64, 64, 64, 64, false);  // a tile[65][64]: pitch 64
  CHECK(plain.stores.wavefronts == accesses);
  CHECK(plain.loads.wavefronts == 32 * accesses);
  CHECK(padded.loads.wavefronts == accesses);
  CHECK(padded.stores.conflicts == 0);
  CHECK(swizzled.loads.wavefronts == accesses);
  CHECK(swizzled.stores.wavefronts == accesses);
  CHECK(pad_row.loads.conflicts == 31 * accesses);
  // A 100 x 68 matrix on 64 x 64 tiles: partial tiles on both sides, still no conflict.
  const auto ragged = ch05::tile_transpose_model(100, 68, 64, 65, false);
  CHECK(ragged.loads.conflicts == 0);
  CHECK(ragged.stores.conflicts == 0);
  // A warp instruction per 32-float strip that holds an element: 100 rows of `in` x 3 strips
  // (68 = 32 + 32 + 4 columns), 68 rows of `out` x 4 strips (100 = 32 + 32 + 32 + 4).
  CHECK(ragged.stores.transactions == 100 * 3);
  CHECK(ragged.loads.transactions == 68 * 4);
}

TEST_CASE("chapter 05: a tile's side and pitch from its static shared memory, in bytes as ncu gives it",
          "[cpu][banks]") {
  int side = 0, pitch = 0;
  CHECK(ch05::tile_from_static_shared(4096, side, pitch));
  CHECK((side == 32 && pitch == 32));
  CHECK(ch05::tile_from_static_shared(4224, side, pitch));
  CHECK((side == 32 && pitch == 33));
  CHECK_FALSE(ch05::tile_from_static_shared(4220, side, pitch));  // no tile's size: bytes are exact
  CHECK(ch05::tile_from_static_shared(16384, side, pitch));
  CHECK((side == 64 && pitch == 64));
  CHECK(ch05::tile_from_static_shared(16640, side, pitch));
  CHECK((side == 64 && pitch == 65));
  CHECK_FALSE(ch05::tile_from_static_shared(8192, side, pitch));
  CHECK_FALSE(ch05::tile_from_static_shared(0, side, pitch));
}

TEST_CASE("chapter 05's 16-byte transpose: the float4 swizzle removes the column reads' 8-way conflict",
          "[cpu][banks]") {
  // One 64 x 64 tile: 8 warps x 4 STS.128 and 4 LDS.128, each 4 transactions (quarters).
  const auto swizzled = ch05::wide_transpose_model(64, 64);
  const auto plain = ch05::wide_transpose_model(64, 64, false);
  CHECK(swizzled.stores.wavefronts == 8 * 4 * 4);
  CHECK(swizzled.stores.conflicts == 0);
  CHECK(swizzled.loads.wavefronts == 8 * 4 * 4);
  CHECK(swizzled.loads.conflicts == 0);
  CHECK(plain.stores.conflicts == 0);              // a quarter stores 8 consecutive float4 of one row
  CHECK(plain.loads.wavefronts == 8 * 4 * 4 * 8);  // a quarter reads rows 4 apart: 8-way
  const auto ragged = ch05::wide_transpose_model(100, 68);
  CHECK(ragged.loads.conflicts == 0);
  CHECK(ragged.stores.conflicts == 0);
}
