// needs.txt, read and applied without a GPU: the parser, its errors, and what a GPU of given
// facts may run, with the reason composed once for every user (the tests, the doctor, the
// programs, sass_check).
#include "catch.hpp"

#include "cml/needs.hpp"

#include <stdexcept>

namespace {
cml::DeviceFacts gpu(const char* name, int major, int minor, int engines = 2, int shared_kib = 99) {
  cml::DeviceFacts f;
  f.name = name;
  f.cc_major = major;
  f.cc_minor = minor;
  f.async_engine_count = engines;
  f.can_map_host_memory = f.managed_memory = f.concurrent_managed_access = true;
  f.shared_per_block_optin = shared_kib * 1024;
  f.threads_per_sm = 1536;
  return f;
}

const char* kTable = R"(# a comment, then needs
07  *    cc=8.0            asynchronous copies
09  4    cc=8.0            cp.async
09  5    cc=9.0            TMA
09  5    shared_per_block=100   two stages
03  4    concurrent_managed_access  prefetch
)";
}  // namespace

TEST_CASE("needs.txt lines name a chapter, its steps, a need and what it is for", "[cpu][needs]") {
  const auto t = cml::needs::parse(kTable);
  REQUIRE(t.size() == 5);
  CHECK(t[0].chapter == "07");
  CHECK(t[0].first_step == 0);
  CHECK(t[0].need.key == "cc");
  CHECK(t[0].need.value == 80);
  CHECK(t[0].need.what == "asynchronous copies");
  CHECK(t[3].need.value == 100 * 1024);
  CHECK(t[4].need.key == "concurrent_managed_access");
}

TEST_CASE("a malformed needs.txt line is refused with its line number", "[cpu][needs]") {
  CHECK_THROWS_WITH(cml::needs::parse("07 * cc=8 copies\n"), cml::test::Contains("line 1"));
  CHECK_THROWS_WITH(cml::needs::parse("\n07 * gpu_magic copies\n"), cml::test::Contains("line 2"));
  CHECK_THROWS_AS(cml::needs::parse("07 0 cc=8.0 copies\n"), std::invalid_argument);
  CHECK_THROWS_AS(cml::needs::parse("07 3-2 cc=8.0 copies\n"), std::invalid_argument);
  CHECK_THROWS_AS(cml::needs::parse("07 * cc=8.0\n"), std::invalid_argument);  // what it is for, missing
}

TEST_CASE("a step is refused on a GPU without its need, naming the GPU and what it lacks", "[cpu][needs]") {
  const auto t = cml::needs::parse(kTable);
  const auto t4 = gpu("Tesla T4", 7, 5, 3, 64);
  CHECK(cml::needs::missing_for("07", 0, t4, t) ==
        "chapter 07: asynchronous copies: needs compute capability 8.0; Tesla T4 is 7.5");
  CHECK(cml::needs::missing_for("07", 3, t4, t) ==
        "step 3: asynchronous copies: needs compute capability 8.0; Tesla T4 is 7.5");
  CHECK(cml::needs::missing_for("09", 1, t4, t).empty());
  CHECK(cml::needs::missing_for("09", 4, t4, t) == "step 4: cp.async: needs compute capability 8.0; Tesla T4 is 7.5");
  const auto h100 = gpu("NVIDIA H100", 9, 0, 3, 227);
  CHECK(cml::needs::missing_for("09", 5, h100, t).empty());
  const auto rtx = gpu("NVIDIA GeForce RTX 5090", 12, 0, 2, 99);
  CHECK(cml::needs::missing_for("09", 5, rtx, t) ==
        "step 5: two stages: needs 100 KiB of shared memory per block; NVIDIA GeForce RTX 5090 has 99 KiB");
  auto wsl = h100;
  wsl.concurrent_managed_access = false;
  CHECK(cml::needs::missing_for("03", 4, wsl, t) ==
        "step 4: prefetch: needs concurrent managed access (concurrentManagedAccess); NVIDIA H100 has none");
  CHECK(cml::needs::missing_for("03", 3, wsl, t).empty());
}

TEST_CASE("a test case's own need is read as needs.txt writes one", "[cpu][needs]") {
  const auto one_engine = gpu("NVIDIA GeForce GTX 1650", 7, 5, 1);
  const auto need = cml::needs::parse_need("copy_engines=2", "the bound of copies both ways");
  CHECK(cml::needs::missing(need, one_engine) ==
        "the bound of copies both ways: needs 2 copy engines; NVIDIA GeForce GTX 1650 has 1");
  CHECK(cml::needs::missing(need, gpu("NVIDIA H100", 9, 0, 3)).empty());
}

TEST_CASE("a chapter between GPUs says how many it needs and how many the machine has, in words", "[cpu][needs]") {
  auto one = gpu("NVIDIA H100", 9, 0, 3);
  one.device_count = 1;
  const auto need = cml::needs::parse_need("gpus=2", "peer copies between two GPUs");
  CHECK(cml::needs::missing(need, one) == "peer copies between two GPUs: needs two GPUs; this machine has one");
  auto two = one;
  two.device_count = 2;
  CHECK(cml::needs::missing(need, two).empty());
  auto four = one;
  four.device_count = 4;
  CHECK(cml::needs::missing(cml::needs::parse_need("gpus=8", "eight"), four) ==
        "eight: needs eight GPUs; this machine has four GPUs");
}

TEST_CASE("the course's needs.txt parses, and its compute capabilities are within the course's range", "[cpu][needs]") {
  const auto& t = cml::needs::course();
  REQUIRE_FALSE(t.empty());
  for (const auto& e : t)
    if (e.need.key == "cc") CHECK((e.need.value >= 75 && e.need.value <= 121));
  CHECK(cml::needs::last_named_step("09") == 6);
}
