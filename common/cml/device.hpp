// What the GPU can do, read once: name, compute capability, memory, copy engines, the
// host-memory features the chapters rely on, and the PCIe link (through NVML, loaded at run
// time, so the course links without the driver's libraries).
#pragma once

#include "table.hpp"

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>

namespace cml {

struct PcieLink {
  bool known = false;
  int gen = 0, width = 0;          // as the link runs now (it may idle at a lower gen)
  int max_gen = 0, max_width = 0;  // the most the GPU and its slot allow
  // Theoretical one-direction rate of the fastest link allowed, in GB/s (after encoding).
  double theoretical_gbps() const;
};

// Usable GB/s of one PCIe lane of a generation, after line encoding (gen 3 to 5: 128b/130b).
double pcie_lane_gbps(int gen);

struct DeviceFacts {
  int index = 0;
  std::string name;
  int cc_major = 0, cc_minor = 0;
  int sm_count = 0;
  std::size_t l2_bytes = 0;
  std::size_t total_bytes = 0, free_bytes = 0;
  int async_engine_count = 0;        // copy engines: 2+ lets H2D and D2H run together
  int device_count = 1;              // CUDA devices this process sees (CUDA_VISIBLE_DEVICES)
  bool can_map_host_memory = false;  // zero-copy mapped memory
  bool unified_addressing = false;   // one address space: host pointers are device pointers
  bool managed_memory = false;
  bool concurrent_managed_access = false;
  bool pageable_memory_access = false;  // the GPU may read plain malloc memory (HMM/ATS)
  int shared_per_block_optin = 0;       // bytes of shared memory a block may ask for
  int threads_per_sm = 0;               // resident threads an SM holds
  int memory_bus_bits = 0;
  int memory_clock_khz = 0;
  int driver_version = 0, runtime_version = 0;
  std::string pci_bus_id;
  PcieLink link;

  int cc() const { return cc_major * 10 + cc_minor; }
  // Theoretical DRAM bandwidth (double data rate) from the attributes, GB/s.
  double dram_peak_gbps() const;
};

// Why CUDA cannot be used here ("no CUDA device: ..."), or nothing when a device is present.
// The runtime answers cudaErrorInsufficientDriver both when the driver is too old and when
// there is none at all, and the two need different fixes, so the reason tells them apart:
// "no NVIDIA driver (libcuda.so.1 not found)" or "the NVIDIA driver is too old for this
// CUDA runtime (driver supports 12.2, runtime needs 13.0)".
std::optional<std::string> cuda_unavailable_reason();

// The words cuda_unavailable_reason uses after "no CUDA device: " for the runtime's
// `error`, given whether the driver's library (libcuda.so.1) loads and the two versions
// (CUDA's encoding, 1000 * major + 10 * minor). Apart so each case is testable without one.
std::string cuda_failure_text(cudaError_t error, bool driver_library_loads, int driver_version, int runtime_version);

// "13.0" for CUDA's encoded version 13000.
std::string cuda_version_text(int version);

// Selects the device and reads its facts. Throws Skip when there is no usable GPU and
// UsageError when `index` is not a device of this machine. With CML_SM_LIMIT=N in the
// environment, the calling thread then works on N of the GPU's SMs or a few more
// (limit_sms), and sm_count says how many: a way to see what a smaller GPU of the same
// architecture would measure, for the speed bars (docs/adding-a-chapter.md). It changes no
// setting of the device, and binds only the thread that selected it: another host thread
// that works on the device enters it with enter_device.
DeviceFacts select_device(int index);

// Makes device `index` current for the calling host thread (the current device is per
// thread), on the same SMs as the thread that selected it: the green context of
// CML_SM_LIMIT when select_device made one, else the device's primary context.
void enter_device(int index);

// How many SMs the kernels of the calling thread run on, on device `index` (default: the
// thread's current device): the green context's under CML_SM_LIMIT, else the device's. What
// a launch that wants "every SM busy" or "every block resident at once" sizes its grid by.
int usable_sm_count(int index);
int usable_sm_count();

// Makes a green context of at least `sms` of device `index`'s SMs (the driver rounds up to
// its partition size) current for the calling thread; returns how many SMs it has. Throws
// UsageError when it cannot.
int limit_sms(int index, int sms);

// What device `index` can do (name, compute capability, SMs, copy engines, host-memory and
// shared-memory features), read without creating a context on it: for a process that only
// decides what to run, such as the tests' supervisor. Memory, versions and the link are left
// unread. Throws as select_device does.
DeviceFacts read_capabilities(int index);

// Device memory a program leaves free beyond its own buffers (the runtime's, the tools').
constexpr std::uint64_t kDeviceHeadroom = 256ull << 20;

// Throws UsageError when `bytes` (named `what`, e.g. "--size=64G") does not fit in the
// device memory that is free now, keeping `headroom` for the runtime.
void require_fits_device(std::uint64_t bytes, const DeviceFacts& facts, const std::string& what,
                         std::uint64_t headroom = kDeviceHeadroom);

// Throws Skip with `why` unless `ok`: a feature this program needs is missing.
void require_feature(bool ok, const std::string& why);

// A few lines about the device for a program's report.
std::string describe(const DeviceFacts& facts);

// One row naming the device, its link and today's date (UTC), written beside a program's
// CSV files so every figure says which GPU it was measured on, and when.
Table device_table(const DeviceFacts& facts);

}  // namespace cml
