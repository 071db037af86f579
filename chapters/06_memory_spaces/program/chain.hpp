// Chapter 06 — the chain that --mode=latency chases (program/latency.cu): `nodes` words,
// `stride` words apart, each holding the position of the next node, in one random cycle
// through all of them. Each load's address is the value the previous load returned, so the
// loads cannot overlap: the time per step is the latency of one load. A random order, with
// nodes in different 128-byte lines, leaves a prefetcher nothing to guess. Host code.
#pragma once

#include <cstddef>
#include <cstdint>
#include <numeric>
#include <random>
#include <utility>
#include <vector>

namespace ch06 {

struct Chain {
  std::size_t nodes = 0, stride = 1;  // stride in 32-bit words
  std::vector<std::uint32_t> words;   // nodes * stride words; a node's word at k * stride
  std::size_t bytes() const { return words.size() * sizeof(std::uint32_t); }
};

// Sattolo's shuffle: a random permutation that is a single cycle, so a chase from any node
// visits every node before it comes back. A fixed seed: every run chases the same chain.
inline Chain make_chain(std::size_t nodes, std::size_t stride, std::uint32_t seed = 6) {
  Chain c{nodes, stride, std::vector<std::uint32_t>(nodes * stride, 0)};
  std::vector<std::uint32_t> next(nodes);
  std::iota(next.begin(), next.end(), 0u);
  std::mt19937 rng(seed);
  for (std::size_t i = nodes - 1; i > 0; --i) std::swap(next[i], next[rng() % i]);
  for (std::size_t k = 0; k < nodes; ++k) c.words[k * stride] = static_cast<std::uint32_t>(next[k] * stride);
  return c;
}

// Where a chase of `steps` loads from position `start` ends: what the GPU must report.
inline std::uint32_t chase_end(const Chain& c, std::uint32_t start, std::uint64_t steps) {
  std::uint32_t j = start;
  for (std::uint64_t i = 0; i < steps; ++i) j = c.words[j];
  return j;
}

}  // namespace ch06
