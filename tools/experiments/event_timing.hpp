// What the experiments in this folder time with: one run of `f` on the default stream
// between two events (cml::Event), and the median of such runs.
#pragma once

#include "cml/stream.hpp"

#include <algorithm>
#include <functional>
#include <vector>

namespace experiments {

inline float time_ms(const std::function<void()>& f) {
  const cml::Event start, stop;
  start.record(nullptr);
  f();
  stop.record(nullptr);
  stop.synchronize();
  return stop.since(start);
}

inline double median(std::vector<float> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

}  // namespace experiments
