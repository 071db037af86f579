// The sector model against cases worked by hand (CUDA C++ Best Practices Guide §9.2.1).
#include "catch.hpp"

#include "cml/sectors.hpp"

#include <stdexcept>

TEST_CASE("a coalesced warp of 4-byte loads touches 4 sectors of one line and wastes nothing", "[cpu][sectors]") {
  const auto c = cml::count_sectors(cml::strided_access(0, 0, 1, 0, 4));
  CHECK(c.sectors == 4);
  CHECK(c.lines == 1);
  CHECK(c.requested == 128);
  CHECK(c.moved == 128);
  CHECK(c.efficiency() == 1.0);
}

TEST_CASE("an offset of one element adds a fifth sector and a second line", "[cpu][sectors]") {
  const auto c = cml::count_sectors(cml::strided_access(0, 0, 1, 1, 4));
  CHECK(c.sectors == 5);
  CHECK(c.lines == 2);
  CHECK(c.efficiency() == Approx(128.0 / 160.0));
  // Offsets that are a whole sector (8 floats) line the warp up with sectors again: 4.
  CHECK(cml::sectors_per_request(0, 64, 1, 8, 4) == Approx(4.0));
  CHECK(cml::sectors_per_request(0, 64, 1, 1, 4) == Approx(5.0));
}

TEST_CASE("stride s of 4-byte loads touches min(4s, 32) sectors", "[cpu][sectors]") {
  CHECK(cml::sectors_per_request(0, 16, 2, 0, 4) == Approx(8.0));
  CHECK(cml::sectors_per_request(0, 16, 4, 0, 4) == Approx(16.0));
  CHECK(cml::sectors_per_request(0, 16, 8, 0, 4) == Approx(32.0));
  CHECK(cml::sectors_per_request(0, 16, 32, 0, 4) == Approx(32.0));
  CHECK(cml::efficiency(0, 16, 2, 0, 4) == Approx(0.5));
  CHECK(cml::efficiency(0, 16, 32, 0, 4) == Approx(4.0 / 32.0));
}

TEST_CASE("a broadcast moves one sector and uses 4 of its bytes", "[cpu][sectors]") {
  cml::WarpAccess a;
  a.address.fill(4096);
  const auto c = cml::count_sectors(a);
  CHECK(c.sectors == 1);
  CHECK(c.requested == 128);
  CHECK(c.unique == 4);
  CHECK(c.efficiency() == Approx(4.0 / 32.0));
}

TEST_CASE("16-byte vector loads of a warp touch 16 sectors in 4 lines", "[cpu][sectors]") {
  const auto c = cml::count_sectors(cml::strided_access(0, 0, 1, 0, 16));
  CHECK(c.sectors == 16);
  CHECK(c.lines == 4);
  CHECK(c.efficiency() == 1.0);
  CHECK(cml::sectors_per_request(0, 8, 1, 0, 8) == Approx(8.0));
}

TEST_CASE("inactive threads touch nothing", "[cpu][sectors]") {
  auto a = cml::strided_access(0, 0, 1, 0, 4);
  a.active = 0x1u;  // only thread 0
  const auto c = cml::count_sectors(a);
  CHECK(c.sectors == 1);
  CHECK(c.requested == 4);
}

TEST_CASE("a misaligned vector access or an odd width is refused, as the hardware would", "[cpu][sectors]") {
  cml::WarpAccess a = cml::strided_access(0, 0, 1, 0, 16);
  a.address[3] += 4;
  CHECK_THROWS_AS(cml::count_sectors(a), std::invalid_argument);
  cml::WarpAccess b;
  b.width = 12;
  CHECK_THROWS_AS(cml::count_sectors(b), std::invalid_argument);
  CHECK_THROWS_AS(cml::sectors_per_request(0, 0, 1, 0, 4), std::invalid_argument);
}
