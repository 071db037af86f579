// Input sizes that are not round and not the same from one run to the next, so that no
// size can be special-cased by the code under test.
#pragma once

#include <cstddef>
#include <random>

namespace cml::test {

// base plus 0 to 996, from a generator seeded once per process.
inline std::size_t jitter(std::size_t base) {
  static std::minstd_rand rng(std::random_device{}());
  return base + rng() % 997;
}

}  // namespace cml::test
