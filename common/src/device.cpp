// Device facts: see cml/device.hpp.
#include "cml/device.hpp"

#include "cml/cli.hpp"  // format_bytes
#include "cml/errors.hpp"

#include <cuda_runtime_api.h>
#include <dlfcn.h>

#include <cstdlib>
#include <ctime>
#include <optional>
#include <sstream>
#include <string>

namespace cml {

double pcie_lane_gbps(int gen) {
  switch (gen) {
    case 1: return 2.5 * 8 / 10 / 8;     // 2.5 GT/s, 8b/10b
    case 2: return 5.0 * 8 / 10 / 8;     // 5 GT/s, 8b/10b
    case 3: return 8.0 * 128 / 130 / 8;  // 8 GT/s, 128b/130b
    case 4: return 16.0 * 128 / 130 / 8;
    case 5: return 32.0 * 128 / 130 / 8;
    case 6: return 64.0 * 242 / 256 / 8;  // PAM4 with FLIT framing (242 of 256 bytes carry data)
    default: return 0.0;
  }
}

double PcieLink::theoretical_gbps() const { return known ? pcie_lane_gbps(max_gen) * max_width : 0.0; }

double DeviceFacts::dram_peak_gbps() const { return 2.0 * memory_clock_khz * 1e3 * (memory_bus_bits / 8.0) / 1e9; }

namespace {

int attribute(cudaDeviceAttr attr, int device) {
  int v = 0;
  CUDA_CHECK(cudaDeviceGetAttribute(&v, attr, device));
  return v;
}

// NVML through dlopen: the PCIe link is the only thing we need from it, and a machine
// without the driver's NVML simply reports the link as unknown.
PcieLink read_pcie_link(const std::string& bus_id) {
  PcieLink link;
  void* lib = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
  if (lib == nullptr) return link;
  using InitFn = int (*)();
  using HandleFn = int (*)(const char*, void**);
  using UintFn = int (*)(void*, unsigned*);
  auto init = reinterpret_cast<InitFn>(dlsym(lib, "nvmlInit_v2"));
  auto shutdown = reinterpret_cast<InitFn>(dlsym(lib, "nvmlShutdown"));
  auto handle_of = reinterpret_cast<HandleFn>(dlsym(lib, "nvmlDeviceGetHandleByPciBusId_v2"));
  auto cur_gen = reinterpret_cast<UintFn>(dlsym(lib, "nvmlDeviceGetCurrPcieLinkGeneration"));
  auto cur_width = reinterpret_cast<UintFn>(dlsym(lib, "nvmlDeviceGetCurrPcieLinkWidth"));
  auto max_gen = reinterpret_cast<UintFn>(dlsym(lib, "nvmlDeviceGetMaxPcieLinkGeneration"));
  auto max_width = reinterpret_cast<UintFn>(dlsym(lib, "nvmlDeviceGetMaxPcieLinkWidth"));
  if (init && shutdown && handle_of && cur_gen && cur_width && max_gen && max_width && init() == 0) {
    void* dev = nullptr;
    unsigned g = 0, w = 0, mg = 0, mw = 0;
    if (handle_of(bus_id.c_str(), &dev) == 0 && cur_gen(dev, &g) == 0 && cur_width(dev, &w) == 0 &&
        max_gen(dev, &mg) == 0 && max_width(dev, &mw) == 0) {
      link = PcieLink{true, static_cast<int>(g), static_cast<int>(w), static_cast<int>(mg), static_cast<int>(mw)};
    }
    shutdown();
  }
  dlclose(lib);
  return link;
}

}  // namespace

std::string cuda_version_text(int version) {
  return std::to_string(version / 1000) + "." + std::to_string(version % 1000 / 10);
}

std::string cuda_failure_text(cudaError_t error, bool driver_library_loads, int driver_version, int runtime_version) {
  if (error == cudaErrorInsufficientDriver) {
    if (!driver_library_loads) return "no NVIDIA driver (libcuda.so.1 not found)";
    return "the NVIDIA driver is too old for this CUDA runtime (driver supports " + cuda_version_text(driver_version) +
           ", runtime needs " + cuda_version_text(runtime_version) + ")";
  }
  return std::string(cudaGetErrorName(error)) + ": " + cudaGetErrorString(error);
}

namespace {
// The same library the runtime loads to reach the driver; without it there is no driver.
bool driver_library_loads() {
  void* lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (lib == nullptr) return false;
  dlclose(lib);
  return true;
}
}  // namespace

std::optional<std::string> cuda_unavailable_reason() {
  int count = 0;
  const cudaError_t e = cudaGetDeviceCount(&count);
  if (e != cudaSuccess) {
    cudaGetLastError();  // clear the sticky-free error so later calls start clean
    int driver = 0, runtime = 0;
    // Either may fail without a driver; the text needs them only when the driver loads.
    if (cudaDriverGetVersion(&driver) != cudaSuccess) driver = 0;
    if (cudaRuntimeGetVersion(&runtime) != cudaSuccess) runtime = 0;
    cudaGetLastError();
    return "no CUDA device: " + cuda_failure_text(e, driver_library_loads(), driver, runtime);
  }
  if (count == 0) return std::string("no CUDA device: the driver reports 0 devices");
  return std::nullopt;
}

namespace {
void check_index(int index) {
  if (auto why = cuda_unavailable_reason()) throw Skip(*why);
  int count = 0;
  CUDA_CHECK(cudaGetDeviceCount(&count));
  if (index < 0 || index >= count)
    throw UsageError("--device=" + std::to_string(index) + ": this machine has " + std::to_string(count) +
                     " CUDA device(s), numbered from 0");
}

// The properties and attributes alone: none of these calls creates a context.
DeviceFacts capabilities(int index) {
  DeviceFacts f;
  f.index = index;
  cudaDeviceProp prop{};
  CUDA_CHECK(cudaGetDeviceProperties(&prop, index));
  f.name = prop.name;
  f.cc_major = attribute(cudaDevAttrComputeCapabilityMajor, index);
  f.cc_minor = attribute(cudaDevAttrComputeCapabilityMinor, index);
  f.sm_count = attribute(cudaDevAttrMultiProcessorCount, index);
  f.l2_bytes = static_cast<std::size_t>(attribute(cudaDevAttrL2CacheSize, index));
  f.async_engine_count = attribute(cudaDevAttrAsyncEngineCount, index);
  CUDA_CHECK(cudaGetDeviceCount(&f.device_count));
  f.can_map_host_memory = attribute(cudaDevAttrCanMapHostMemory, index) != 0;
  f.unified_addressing = attribute(cudaDevAttrUnifiedAddressing, index) != 0;
  f.managed_memory = attribute(cudaDevAttrManagedMemory, index) != 0;
  f.concurrent_managed_access = attribute(cudaDevAttrConcurrentManagedAccess, index) != 0;
  f.pageable_memory_access = attribute(cudaDevAttrPageableMemoryAccess, index) != 0;
  f.shared_per_block_optin = attribute(cudaDevAttrMaxSharedMemoryPerBlockOptin, index);
  f.threads_per_sm = attribute(cudaDevAttrMaxThreadsPerMultiProcessor, index);
  f.memory_bus_bits = attribute(cudaDevAttrGlobalMemoryBusWidth, index);
  f.memory_clock_khz = attribute(cudaDevAttrMemoryClockRate, index);
  return f;
}
}  // namespace

DeviceFacts read_capabilities(int index) {
  check_index(index);
  return capabilities(index);
}

DeviceFacts select_device(int index) {
  check_index(index);
  CUDA_CHECK(cudaSetDevice(index));
  CUDA_CHECK(cudaFree(nullptr));  // create the context now, not inside the first timing

  DeviceFacts f = capabilities(index);
  if (const char* limit = std::getenv("CML_SM_LIMIT"); limit != nullptr && *limit != '\0')
    f.sm_count = limit_sms(index, std::atoi(limit));
  CUDA_CHECK(cudaMemGetInfo(&f.free_bytes, &f.total_bytes));
  CUDA_CHECK(cudaDriverGetVersion(&f.driver_version));
  CUDA_CHECK(cudaRuntimeGetVersion(&f.runtime_version));
  char bus[32] = {};
  CUDA_CHECK(cudaDeviceGetPCIBusId(bus, sizeof bus, index));
  f.pci_bus_id = bus;
  f.link = read_pcie_link(f.pci_bus_id);
  return f;
}

void require_fits_device(std::uint64_t bytes, const DeviceFacts& facts, const std::string& what,
                         std::uint64_t headroom) {
  const std::uint64_t free_bytes = facts.free_bytes;
  if (bytes + headroom > free_bytes)
    throw UsageError(what + ": needs " + format_bytes(bytes) + " of device memory, but " + facts.name + " has " +
                     format_bytes(free_bytes) + " free");
}

void require_feature(bool ok, const std::string& why) {
  if (!ok) throw Skip(why);
}

std::string describe(const DeviceFacts& f) {
  std::ostringstream os;
  os.precision(3);
  os << "device " << f.index << ": " << f.name << " (sm_" << f.cc() << ", " << f.sm_count << " SMs, "
     << format_bytes(f.total_bytes) << ", " << f.async_engine_count << " copy engine(s))\n";
  os << "  PCIe: ";
  if (f.link.known)
    os << "gen " << f.link.gen << " x" << f.link.width << " now, up to gen " << f.link.max_gen << " x"
       << f.link.max_width << " = " << f.link.theoretical_gbps() << " GB/s per direction";
  else
    os << "unknown (NVML not available)";
  os << "\n  canMapHostMemory=" << f.can_map_host_memory << " unifiedAddressing=" << f.unified_addressing
     << " pageableMemoryAccess=" << f.pageable_memory_access
     << " concurrentManagedAccess=" << f.concurrent_managed_access << "\n";
  os << "  driver " << cuda_version_text(f.driver_version) << ", runtime " << cuda_version_text(f.runtime_version)
     << "\n";
  return os.str();
}

Table device_table(const DeviceFacts& f) {
  char date[16] = {};
  const std::time_t now = std::time(nullptr);
  std::tm utc{};
  gmtime_r(&now, &utc);
  std::strftime(date, sizeof date, "%Y-%m-%d", &utc);
  Table t("device",
          {"name", "sm", "sms", "pcie_gen", "pcie_width", "link_gbps", "copy_engines", "cuda_driver", "date"});
  t.row({f.name, std::to_string(f.cc()), std::to_string(f.sm_count), std::to_string(f.link.max_gen),
         std::to_string(f.link.max_width), fixed(f.link.theoretical_gbps(), 1), std::to_string(f.async_engine_count),
         cuda_version_text(f.driver_version), date});
  return t;
}

}  // namespace cml
