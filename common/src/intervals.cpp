// Interval arithmetic: see cml/intervals.hpp.
#include "cml/intervals.hpp"

#include <algorithm>
#include <cstddef>
#include <utility>

namespace cml {

std::vector<Interval> merge(std::vector<Interval> xs) {
  // Empty intervals cover no time; dropping them first keeps a zero-length record sitting
  // between two real ones from joining them.
  xs.erase(std::remove_if(xs.begin(), xs.end(), [](const Interval& x) { return x.length() == 0; }), xs.end());
  std::sort(xs.begin(), xs.end(), [](const Interval& l, const Interval& r) {
    return l.start != r.start ? l.start < r.start : l.end < r.end;
  });
  std::vector<Interval> out;
  for (const Interval& x : xs) {
    // `<=` joins touching intervals too: [0,5) and [5,9) are one busy stretch, not two.
    if (!out.empty() && x.start <= out.back().end)
      out.back().end = std::max(out.back().end, x.end);
    else
      out.push_back(x);
  }
  return out;
}

std::uint64_t union_length(const std::vector<Interval>& xs) {
  std::uint64_t total = 0;
  for (const Interval& x : merge(xs)) total += x.length();
  return total;
}

std::uint64_t overlap_length(const std::vector<Interval>& a, const std::vector<Interval>& b) {
  // Once each side is merged, its intervals are disjoint and sorted, so "some interval of a
  // and some of b in flight" is the plain intersection of two sorted disjoint lists: a
  // two-pointer sweep, advancing whichever interval ends first.
  const std::vector<Interval> ma = merge(a);
  const std::vector<Interval> mb = merge(b);
  std::uint64_t total = 0;
  std::size_t i = 0, j = 0;
  while (i < ma.size() && j < mb.size()) {
    const std::uint64_t lo = std::max(ma[i].start, mb[j].start);
    const std::uint64_t hi = std::min(ma[i].end, mb[j].end);
    if (hi > lo) total += hi - lo;
    if (ma[i].end < mb[j].end)
      ++i;
    else
      ++j;
  }
  return total;
}

std::uint64_t self_overlap_length(const std::vector<Interval>& xs) {
  // A sweep over the ends: +1 at each start, -1 at each end, and the time between two
  // consecutive points counts when two or more are in flight. At equal times ends come
  // first, so [0,5) and [5,9) never count as two at once.
  std::vector<std::pair<std::uint64_t, int>> points;
  for (const Interval& x : xs)
    if (x.length() > 0) {
      points.emplace_back(x.start, +1);
      points.emplace_back(x.end, -1);
    }
  std::sort(points.begin(), points.end());  // (t, -1) sorts before (t, +1)
  std::uint64_t total = 0;
  int in_flight = 0;
  for (std::size_t k = 0; k < points.size(); ++k) {
    if (k > 0 && in_flight >= 2) total += points[k].first - points[k - 1].first;
    in_flight += points[k].second;
  }
  return total;
}

Interval span(const std::vector<Interval>& xs) {
  if (xs.empty()) return {};
  Interval s = xs.front();
  for (const Interval& x : xs) {
    s.start = std::min(s.start, x.start);
    s.end = std::max(s.end, x.end);
  }
  return s;
}

double overlap_fraction(const std::vector<Interval>& a, const std::vector<Interval>& b) {
  std::vector<Interval> all(a);
  all.insert(all.end(), b.begin(), b.end());
  const std::uint64_t whole = span(all).length();
  if (whole == 0) return 0.0;  // nothing ran (or only instants): no fraction to speak of
  return static_cast<double>(overlap_length(a, b)) / static_cast<double>(whole);
}

}  // namespace cml
