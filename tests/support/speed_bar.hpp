// How the chapters' [perf] cases state a speed bar: a kernel and the one it is measured
// against, timed interleaved in the same process (A B A B ..., so clocks, temperature and
// neighbours affect both alike), base's median time over the kernel's compared with a bar
// that sits between the slowest correct solution and the fastest mistake of its step.
#pragma once

#include "catch.hpp"
#include "gpu.hpp"

#include "cml/stream.hpp"
#include "cml/timing.hpp"

#include <cstddef>
#include <string>
#include <vector>

namespace cml::test {

// Each of `work` timed interleaved on a stream of its own, 2 rounds of warm-up and then 10
// runs each: one Stats per item, in order.
inline std::vector<cml::Stats> time_together(const std::vector<cml::Work>& work) {
  cml::Stream s;
  return cml::time_interleaved(work, s, {2, 10});
}

// Bytes of an array for a copy-bound bar: 8x the L2 or more (at least 256 MiB), so the L2
// holds none of it between runs; halved while two such arrays would not fit in free memory.
inline std::size_t large_array_bytes() {
  const auto& d = device();
  std::size_t bytes = std::size_t{256} << 20;
  while (bytes < 8 * d.l2_bytes) bytes *= 2;
  while (2 * bytes > d.free_bytes && bytes > (std::size_t{64} << 20)) bytes /= 2;
  return bytes;
}

// The bar: `fn` reaches `bar` of `base`'s speed (base's median time over fn's, from the same
// interleaved run). A failure reads "<what>: <the ratio, with both noises> of <base_name>;
// want <bar><then>": the noise shows a learner whether a near miss was this run's.
inline void check_bar(const cml::Stats& base, const cml::Stats& fn, double bar, const std::string& what,
                      const std::string& base_name, const std::string& then) {
  INFO(what << ": " << cml::ratio_text(base, fn) << " of " << base_name << "; want " << bar << then);
  CHECK(base.median_ms / fn.median_ms >= bar);
}

}  // namespace cml::test
