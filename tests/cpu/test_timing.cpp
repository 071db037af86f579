// The timing helper's statistics, noise and units (the GPU part is exercised by every chapter).
#include "catch.hpp"

#include "cml/timing.hpp"

#include <cmath>
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

TEST_CASE("the noise is the samples' standard deviation over their mean, as nvbench's", "[cpu][timing]") {
  // mean 2, unbiased variance ((1-2)^2 + 0 + (3-2)^2) / (3 - 1) = 1: 1 / 2 = 50 %
  CHECK(cml::summarize({3.0, 1.0, 2.0}).noise_pct == Approx(50.0));
  CHECK(cml::summarize({10.0, 10.0, 10.0, 10.0}).noise_pct == 0.0);
  CHECK(cml::summarize({1.0, 1.1}).noise_pct == Approx(6.73).epsilon(0.001));
  CHECK(cml::summarize({0.0, 0.0}).noise_pct == 0.0);
  // One run has no spread: the noise is unknown, never a reassuring 0.
  CHECK(std::isnan(cml::summarize({4.0}).noise_pct));
}

TEST_CASE("a time reads with its noise beside it", "[cpu][timing]") {
  cml::Stats s;
  s.median_ms = 1.234;
  s.noise_pct = 0.84;
  CHECK(cml::format_noise(s) == "±0.8 %");
  CHECK(cml::with_noise(s) == "1.234 ms ±0.8 %");
  s.median_ms = 0.0123;
  CHECK(cml::with_noise(s) == "12.3 us ±0.8 %");
  CHECK(cml::with_noise(cml::summarize({2.0})) == "2.000 ms ±? %");
}

TEST_CASE("a ratio of medians reads with both noises, so a learner sees when it is noise", "[cpu][timing]") {
  cml::Stats a, b;
  a.median_ms = 0.93;
  a.noise_pct = 0.8;
  b.median_ms = 1.0;
  b.noise_pct = 1.2;
  CHECK(cml::ratio_text(a, b) == "0.93 (noise 0.8 % / 1.2 %)");
  CHECK(cml::ratio_text(b, a) == "1.08 (noise 1.2 % / 0.8 %)");
  b.median_ms = 0.0;
  CHECK_THAT(cml::ratio_text(a, b), cml::test::StartsWith("n/a (noise"));
}
