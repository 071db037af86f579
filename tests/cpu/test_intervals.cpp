// Interval arithmetic (cml/intervals.hpp): the numbers the overlap chapters' mechanism
// checks rest on, so each rule is pinned down here where no GPU is needed.
#include "catch.hpp"

#include "cml/intervals.hpp"

#include <cmath>
#include <cstdint>
#include <vector>

using cml::Interval;
using Intervals = std::vector<Interval>;

namespace {
// Compares as (start, end) pairs so a failure prints both lists readably.
std::vector<std::vector<std::uint64_t>> pairs(const Intervals& xs) {
  std::vector<std::vector<std::uint64_t>> out;
  for (const Interval& x : xs) out.push_back({x.start, x.end});
  return out;
}
using P = std::vector<std::vector<std::uint64_t>>;
}  // namespace

TEST_CASE("merge joins overlapping intervals into one", "[cpu][intervals]") {
  CHECK(pairs(cml::merge({{0, 10}, {5, 15}, {12, 20}})) == P{{0, 20}});
}

TEST_CASE("merge joins intervals that only touch", "[cpu][intervals]") {
  CHECK(pairs(cml::merge({{0, 5}, {5, 9}})) == P{{0, 9}});
}

TEST_CASE("merge keeps separate intervals separate", "[cpu][intervals]") {
  CHECK(pairs(cml::merge({{0, 5}, {6, 9}})) == P{{0, 5}, {6, 9}});
}

TEST_CASE("merge drops empty intervals", "[cpu][intervals]") {
  CHECK(pairs(cml::merge({{3, 3}, {0, 2}, {7, 7}})) == P{{0, 2}});
  // An empty interval between two real ones must not bridge them.
  CHECK(pairs(cml::merge({{0, 5}, {5, 5}, {6, 8}})) == P{{0, 5}, {6, 8}});
}

TEST_CASE("merge sorts unsorted input", "[cpu][intervals]") {
  CHECK(pairs(cml::merge({{30, 40}, {0, 10}, {20, 25}, {5, 12}})) == P{{0, 12}, {20, 25}, {30, 40}});
}

TEST_CASE("merge swallows nested intervals", "[cpu][intervals]") {
  CHECK(pairs(cml::merge({{0, 100}, {10, 20}, {50, 60}})) == P{{0, 100}});
}

TEST_CASE("merge of nothing is nothing", "[cpu][intervals]") { CHECK(cml::merge({}).empty()); }

TEST_CASE("union length counts time covered twice only once", "[cpu][intervals]") {
  CHECK(cml::union_length({{0, 10}, {5, 15}}) == 15);
  CHECK(cml::union_length({{0, 10}, {20, 25}}) == 15);
  CHECK(cml::union_length({{0, 10}, {2, 3}}) == 10);
  CHECK(cml::union_length({}) == 0);
}

TEST_CASE("overlap of disjoint sets is zero", "[cpu][intervals]") {
  CHECK(cml::overlap_length({{0, 10}, {20, 30}}, {{10, 20}, {30, 40}}) == 0);
}

TEST_CASE("overlap with a nested interval is the nested interval's length", "[cpu][intervals]") {
  CHECK(cml::overlap_length({{0, 100}}, {{10, 30}}) == 20);
  CHECK(cml::overlap_length({{10, 30}}, {{0, 100}}) == 20);
}

TEST_CASE("overlap of partially overlapping sets counts only the shared time", "[cpu][intervals]") {
  CHECK(cml::overlap_length({{0, 10}}, {{5, 15}}) == 5);
  // a: [0,10) [20,30); b: [5,25) -> shared [5,10) and [20,25).
  CHECK(cml::overlap_length({{0, 10}, {20, 30}}, {{5, 25}}) == 10);
}

TEST_CASE("overlap counts time once however many intervals of a side are in flight", "[cpu][intervals]") {
  // Two copies in flight together over one kernel still make 10 ns of overlap, not 20.
  CHECK(cml::overlap_length({{0, 10}, {0, 10}}, {{0, 10}}) == 10);
  CHECK(cml::overlap_length({{0, 10}, {5, 10}}, {{5, 20}}) == 5);
}

TEST_CASE("overlap is symmetric", "[cpu][intervals]") {
  const Intervals a{{0, 7}, {9, 14}, {20, 31}};
  const Intervals b{{3, 10}, {12, 25}, {30, 40}};
  CHECK(cml::overlap_length(a, b) == cml::overlap_length(b, a));
  // [3,7)=4, [9,10)=1, [12,14)=2, [20,25)=5, [30,31)=1
  CHECK(cml::overlap_length(a, b) == 13);
}

TEST_CASE("overlap with an empty side is zero", "[cpu][intervals]") {
  CHECK(cml::overlap_length({}, {{0, 10}}) == 0);
  CHECK(cml::overlap_length({{0, 10}}, {}) == 0);
  CHECK(cml::overlap_length({}, {}) == 0);
}

TEST_CASE("span runs from the earliest start to the latest end", "[cpu][intervals]") {
  const Interval s = cml::span({{40, 50}, {10, 20}, {30, 35}});
  CHECK(s.start == 10);
  CHECK(s.end == 50);
}

TEST_CASE("span of nothing is the empty interval at zero", "[cpu][intervals]") {
  const Interval s = cml::span({});
  CHECK(s.start == 0);
  CHECK(s.end == 0);
  CHECK(s.length() == 0);
}

TEST_CASE("a perfect two-stage pipeline overlaps for all but its first and last stage", "[cpu][intervals]") {
  // Four chunks, each copied for 10 ns and then computed for 10 ns, the copy of chunk k+1
  // running beside the compute of chunk k: copies [0,10) [10,20) [20,30) [30,40), kernels
  // [10,20) [20,30) [30,40) [40,50). Both are in flight for 30 of the 50 ns.
  Intervals copies, kernels;
  for (std::uint64_t k = 0; k < 4; ++k) {
    copies.push_back({10 * k, 10 * k + 10});
    kernels.push_back({10 * k + 10, 10 * k + 20});
  }
  CHECK(cml::overlap_length(copies, kernels) == 30);
  // No Approx: its spelling differs between Catch2 v2 and v3, and a tolerance does the job.
  CHECK(std::abs(cml::overlap_fraction(copies, kernels) - 0.6) < 1e-12);
}

TEST_CASE("a serial run has no overlap at all", "[cpu][intervals]") {
  CHECK(cml::overlap_fraction({{0, 10}, {20, 30}}, {{10, 20}, {30, 40}}) == 0.0);
}

TEST_CASE("overlap fraction of nothing is zero", "[cpu][intervals]") {
  CHECK(cml::overlap_fraction({}, {}) == 0.0);
  CHECK(cml::overlap_fraction({{0, 10}}, {}) == 0.0);
  CHECK(cml::overlap_fraction({{5, 5}}, {{5, 5}}) == 0.0);
}

TEST_CASE("an interval whose end precedes its start has zero length", "[cpu][intervals]") {
  CHECK(Interval{10, 5}.length() == 0);
  CHECK(cml::merge({{10, 5}}).empty());
}

TEST_CASE("self overlap counts the time two or more intervals of one list run at once", "[cpu][intervals]") {
  CHECK(cml::self_overlap_length({{0, 10}, {5, 15}}) == 5);
  // Three at once still counts once: [4,6) has three, [2,4) and [6,8) two.
  CHECK(cml::self_overlap_length({{0, 8}, {2, 10}, {4, 6}}) == 6);
  CHECK(cml::self_overlap_length({{0, 100}, {10, 20}, {50, 60}}) == 20);
}

TEST_CASE("self overlap of back-to-back intervals is zero", "[cpu][intervals]") {
  // One stream's kernels: each starts where the last ended, so none ran together.
  CHECK(cml::self_overlap_length({{0, 5}, {5, 9}, {9, 12}}) == 0);
  CHECK(cml::self_overlap_length({{20, 30}, {0, 10}}) == 0);
  CHECK(cml::self_overlap_length({{3, 3}, {3, 3}}) == 0);
  CHECK(cml::self_overlap_length({}) == 0);
}
