// The timing helper's statistics and units (the GPU part is exercised by every chapter).
#include "catch.hpp"

#include "cml/timing.hpp"

#include <stdexcept>

TEST_CASE("summarize gives the median, min and max of the samples", "[cpu][timing]") {
  const auto odd = cml::summarize({5.0, 1.0, 3.0});
  CHECK(odd.median_ms == 3.0);
  CHECK(odd.min_ms == 1.0);
  CHECK(odd.max_ms == 5.0);
  CHECK(odd.reps == 3);
  const auto even = cml::summarize({4.0, 1.0, 2.0, 3.0});
  CHECK(even.median_ms == 2.5);
  CHECK_THROWS_AS(cml::summarize({}), std::invalid_argument);
}

TEST_CASE("gbps counts 10^9 bytes per second", "[cpu][timing]") {
  CHECK(cml::gbps(1'000'000'000, 1000.0) == Approx(1.0));
  CHECK(cml::gbps(256ull << 20, 4.86) == Approx(55.23).epsilon(0.001));
  CHECK(cml::gbps(1, 0.0) == 0.0);
}

TEST_CASE("times print in the unit that reads best", "[cpu][timing]") {
  CHECK(cml::format_ms(0.45) == "450.0 us");
  CHECK(cml::format_ms(7.9) == "7.900 ms");
}
