// Chapter 03 — one lane with everything it owns: a managed buffer first touched on the
// CPU (so its pages start there), a copy of its initial contents for the CPU reference,
// a stream and a round signal. Shared by main.cu and the tests.
#pragma once

#include "unified.cuh"

#include "cml/buffers.hpp"
#include "cml/stream.hpp"

#include <cstring>
#include <random>
#include <vector>

namespace ch03 {

inline void fill_random(unsigned* p, std::size_t n, unsigned seed) {
  std::minstd_rand rng(seed);
  for (std::size_t i = 0; i < n; ++i) p[i] = static_cast<unsigned>(rng());
}

struct LaneOwner {
  LaneOwner(std::size_t n, const cml::ManagedBuffer<unsigned>& table, int device, unsigned seed)
      : data(n), initial(n) {
    fill_random(data.data(), n, seed);
    std::memcpy(initial.data(), data.data(), n * sizeof(unsigned));
    lane = Lane{data.data(), n, table.data(), table.size(), stream.get(), device};
  }
  // What the buffer must hold after `rounds` rounds of run_lane.
  std::vector<unsigned> after_rounds(int rounds) const {
    std::vector<unsigned> want = initial;
    reference_rounds(want.data(), want.size(), lane.table, lane.table_n, rounds);
    return want;
  }
  cml::ManagedBuffer<unsigned> data;
  std::vector<unsigned> initial;
  cml::Stream stream;
  RoundSignal signal;
  Lane lane;
};

}  // namespace ch03
