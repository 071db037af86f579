// Device facts that are arithmetic: the PCIe link's theoretical rate and the DRAM peak.
#include "catch.hpp"

#include "cml/device.hpp"

TEST_CASE("a PCIe lane's usable rate follows its generation's encoding", "[cpu][device]") {
  CHECK(cml::pcie_lane_gbps(1) == Approx(0.25));
  CHECK(cml::pcie_lane_gbps(2) == Approx(0.5));
  CHECK(cml::pcie_lane_gbps(3) == Approx(0.9846).epsilon(0.001));
  CHECK(cml::pcie_lane_gbps(5) == Approx(3.938).epsilon(0.001));
  CHECK(cml::pcie_lane_gbps(0) == 0.0);
}

TEST_CASE("a gen 5 x16 link carries about 63 GB/s per direction", "[cpu][device]") {
  cml::PcieLink link{true, 1, 16, 5, 16};  // idling at gen 1: the theoretical rate uses the max
  CHECK(link.theoretical_gbps() == Approx(63.0).epsilon(0.001));
  CHECK(cml::PcieLink{}.theoretical_gbps() == 0.0);
}

TEST_CASE("the DRAM peak is twice the memory clock times the bus width", "[cpu][device]") {
  cml::DeviceFacts f;
  f.memory_clock_khz = 1'000'000;  // 1 GHz
  f.memory_bus_bits = 512;
  CHECK(f.dram_peak_gbps() == Approx(128.0));
}

TEST_CASE("without a GPU, the reason names the missing device", "[cpu][device]") {
  // On a machine with a GPU there is no reason; without one it says why in one line.
  if (auto why = cml::cuda_unavailable_reason()) CHECK_THAT(*why, cml::test::StartsWith("no CUDA device"));
}
