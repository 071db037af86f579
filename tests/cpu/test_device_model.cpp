// Device facts that need no GPU: the PCIe link's theoretical rate, the DRAM peak, and why
// CUDA cannot start (no driver at all, or one too old for the runtime).
#include "catch.hpp"

#include "cml/device.hpp"

#include <dlfcn.h>

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

TEST_CASE("no driver and a driver too old for the runtime are told apart", "[cpu][device]") {
  // The runtime answers cudaErrorInsufficientDriver for both; the fixes differ.
  CHECK(cml::cuda_failure_text(cudaErrorInsufficientDriver, false, 0, 13000) ==
        "no NVIDIA driver (libcuda.so.1 not found)");
  CHECK(cml::cuda_failure_text(cudaErrorInsufficientDriver, true, 12020, 13000) ==
        "the NVIDIA driver is too old for this CUDA runtime (driver supports 12.2, runtime needs 13.0)");
  // Other errors keep the runtime's own name and words.
  CHECK_THAT(cml::cuda_failure_text(cudaErrorNoDevice, true, 13000, 13000),
             cml::test::StartsWith("cudaErrorNoDevice: "));
  CHECK(cml::cuda_version_text(12080) == "12.8");
}

TEST_CASE("on a machine without the driver's library, the reason says there is no driver", "[cpu][device]") {
  // Asked independently of the library: can this process load libcuda.so.1 at all?
  void* driver = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (driver != nullptr) {
    dlclose(driver);
    return;  // a driver is installed: what the reason says then is checked above
  }
  const auto why = cml::cuda_unavailable_reason();
  REQUIRE(why.has_value());
  CHECK(*why == "no CUDA device: no NVIDIA driver (libcuda.so.1 not found)");
}
