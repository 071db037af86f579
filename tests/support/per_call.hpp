// What the tests of chapters 01 and 02 check of functions that hand out memory or streams:
// that every call gives its own. A step done once per process (a function-static buffer, a
// stream created on the first call) passes a test that makes one call per process; these
// make several in one process and look at what each call gave and what each release got.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace cml::test {

// `bytes` bytes from `p`: what one call gave.
struct Range {
  const void* p = nullptr;
  std::size_t bytes = 0;
};

// Whether `p` lies in [base, base + bytes).
inline bool within(const void* p, const void* base, std::size_t bytes) {
  const auto x = reinterpret_cast<std::uintptr_t>(p), b = reinterpret_cast<std::uintptr_t>(base);
  return x >= b && x - b < bytes;
}

// "" when no two of the ranges share a byte; else "<what> of call j shares memory with the
// one of call i (the same address: one buffer handed out twice)" for the first such pair,
// calls counted from 1 in the order they were made.
inline std::string shared_ranges(const std::vector<Range>& r, const std::string& what) {
  for (std::size_t j = 1; j < r.size(); ++j)
    for (std::size_t i = 0; i < j; ++i) {
      const auto a = reinterpret_cast<std::uintptr_t>(r[i].p), b = reinterpret_cast<std::uintptr_t>(r[j].p);
      const bool overlap = a < b + (r[j].bytes ? r[j].bytes : 1) && b < a + (r[i].bytes ? r[i].bytes : 1);
      if (!overlap) continue;
      return what + " of call " + std::to_string(j + 1) + " shares memory with the one of call " +
             std::to_string(i + 1) + (a == b ? " (the same address: one buffer handed out twice)" : "");
    }
  return "";
}

}  // namespace cml::test
