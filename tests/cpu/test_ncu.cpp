// Parsing Nsight Compute's raw CSV page and its permission error.
#include "catch.hpp"

#include "cml/ncu.hpp"

namespace {
const char* kRaw =
    "==PROF== Connected to process 1234\n"
    "\"ID\",\"Process ID\",\"Process Name\",\"Host Name\",\"Kernel Name\",\"Context\",\"Stream\","
    "\"l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum\",\"l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum\"\n"
    "\"\",\"\",\"\",\"\",\"\",\"\",\"\",\"request\",\"sector\"\n"
    "\"0\",\"1234\",\"test\",\"127.0.0.1\",\"void ch04::offset_copy<float>(const float *, float *, unsigned long, "
    "unsigned long)\",\"1\",\"7\",\"262,144\",\"1048576\"\n"
    "\"1\",\"1234\",\"test\",\"127.0.0.1\",\"ch04::copy_kernel\",\"1\",\"7\",\"1000\",\"5000.5\"\n";
}

TEST_CASE("ncu's raw CSV page gives each kernel's metrics in launch order", "[cpu][ncu]") {
  const std::vector<std::string> metrics = {"l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum",
                                            "l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum"};
  const auto k = cml::ncu::parse_raw_csv(kRaw, metrics);
  REQUIRE(k.size() == 2);
  CHECK(k[0].kernel == "void ch04::offset_copy<float>(const float *, float *, unsigned long, unsigned long)");
  CHECK(k[0].values.at(metrics[0]) == 262144.0);
  CHECK(k[0].values.at(metrics[1]) == 1048576.0);
  CHECK(k[1].values.at(metrics[1]) == 5000.5);
}

TEST_CASE("ncu's counter-permission error becomes a reason to skip", "[cpu][ncu]") {
  CHECK(cml::ncu::permission_problem("==ERROR== ERR_NVGPUCTRPERM - The user does not have permission"));
  CHECK_FALSE(cml::ncu::permission_problem("==PROF== Disconnected"));
}

TEST_CASE("counters held by another profiler become a reason to skip, not the program's failure", "[cpu][ncu]") {
  // ncu 2025.3's words when a second ncu (a parallel test, mutants.py --jobs) held the counters.
  const auto why = cml::ncu::busy_problem(
      "==ERROR== An error was reported by the driver:\n==ERROR== Profiling failed because a driver resource was "
      "unavailable. Ensure that no other tool (like DCGM) is concurrently collecting profiling data.");
  REQUIRE(why);
  CHECK(why->find("profiling resources") != std::string::npos);  // the words CML_REQUIRE_NCU skips on
  CHECK_FALSE(cml::ncu::busy_problem("==PROF== Disconnected"));
}

TEST_CASE("what went wrong in a profiled run is kept: ncu's errors and the target's failure", "[cpu][ncu]") {
  const std::string out =
      "==PROF== Connected to process 42\n"
      "==PROF== Profiling \"transpose_tiled_kernel\": 0%....50%....100% - 9 passes\n"
      "==ERROR== Failed to profile \"transpose_wide_kernel\" in process 42\n"
      "../src/tests/test_05_shared_memory.cpp:340: FAILED:\n"
      "  REQUIRE( ok )\n"
      "with expansion:\n"
      "==PROF== Disconnected from process 42\n";
  const auto said = cml::ncu::trouble_lines(out);
  CHECK(said.find("Failed to profile \"transpose_wide_kernel\"") != std::string::npos);
  CHECK(said.find("FAILED:") != std::string::npos);
  CHECK(said.find("REQUIRE( ok )") != std::string::npos);
  CHECK(said.find("Connected") == std::string::npos);
  CHECK(cml::ncu::trouble_lines("==PROF== Disconnected from process 42\n").empty());
  CHECK(cml::ncu::trouble_lines(std::string(2000, 'x') + " FAILED:\n", 100).size() <= 103);
}
