// Interval arithmetic over a trace's timeline (nanoseconds): how long something was busy,
// how long two kinds of work were in flight together. Pure host code, tested on the CPU.
#pragma once

#include <cstdint>
#include <vector>

namespace cml {

struct Interval {
  std::uint64_t start = 0;  // ns
  std::uint64_t end = 0;    // ns, end >= start
  std::uint64_t length() const { return end > start ? end - start : 0; }
};

// The intervals merged: sorted, overlapping and touching ones joined, empty ones dropped.
std::vector<Interval> merge(std::vector<Interval> xs);

// Total time covered by at least one interval.
std::uint64_t union_length(const std::vector<Interval>& xs);

// Time during which at least one interval of `a` and at least one of `b` are in flight.
std::uint64_t overlap_length(const std::vector<Interval>& a, const std::vector<Interval>& b);

// Time during which at least two intervals of `xs` are in flight at once (touching ones do
// not overlap): how long two kernels of one trace ran together, for example.
std::uint64_t self_overlap_length(const std::vector<Interval>& xs);

// From the earliest start to the latest end ({0,0} when empty).
Interval span(const std::vector<Interval>& xs);

// overlap_length(a, b) / span(a ∪ b).length(): the fraction of the whole run that had both
// kinds of work in flight. 0 when there is nothing.
double overlap_fraction(const std::vector<Interval>& a, const std::vector<Interval>& b);

}  // namespace cml
