// See cml/end_guard.hpp. The driver's virtual memory management through the runtime's
// lookup of driver entry points (no -lcuda): reserve [base, base + mapped + guard), create
// `mapped` bytes of physical memory on the current device, map them at base, give the
// device read and write access to them, and leave the rest of the range unmapped.
#include "cml/end_guard.hpp"

#include "cml/driver.hpp"
#include "cml/errors.hpp"

#include <cuda.h>
#include <cudaTypedefs.h>
#include <cuda_runtime_api.h>

#include <cstdint>
#include <string>

namespace cml {

namespace {

// The driver functions, looked up once: null where the driver has none.
struct Vmm {
  PFN_cuDeviceGet_v2000 device_get = nullptr;
  PFN_cuDeviceGetAttribute_v2000 attribute = nullptr;
  PFN_cuMemGetAllocationGranularity_v10020 granularity = nullptr;
  PFN_cuMemAddressReserve_v10020 reserve = nullptr;
  PFN_cuMemAddressFree_v10020 address_free = nullptr;
  PFN_cuMemCreate_v10020 create = nullptr;
  PFN_cuMemRelease_v10020 release = nullptr;
  PFN_cuMemMap_v10020 map = nullptr;
  PFN_cuMemUnmap_v10020 unmap = nullptr;
  PFN_cuMemSetAccess_v10020 set_access = nullptr;
  std::string missing;  // the first function the driver did not give
};

template <typename Fn>
void lookup(const char* name, int version, Fn& fn, std::string& missing) {
  fn = driver_function<Fn>(name, version);
  if (fn == nullptr && missing.empty()) missing = name;
}

const Vmm& vmm() {
  static const Vmm v = [] {
    Vmm x;
    lookup("cuDeviceGet", 2000, x.device_get, x.missing);
    lookup("cuDeviceGetAttribute", 2000, x.attribute, x.missing);
    lookup("cuMemGetAllocationGranularity", 10020, x.granularity, x.missing);
    lookup("cuMemAddressReserve", 10020, x.reserve, x.missing);
    lookup("cuMemAddressFree", 10020, x.address_free, x.missing);
    lookup("cuMemCreate", 10020, x.create, x.missing);
    lookup("cuMemRelease", 10020, x.release, x.missing);
    lookup("cuMemMap", 10020, x.map, x.missing);
    lookup("cuMemUnmap", 10020, x.unmap, x.missing);
    lookup("cuMemSetAccess", 10020, x.set_access, x.missing);
    return x;
  }();
  return v;
}

void check_cu(CUresult r, const char* what) {
  if (r != CUDA_SUCCESS)
    throw CheckFailed(std::string(what) + " failed: CUresult " + std::to_string(static_cast<int>(r)));
}

// The current device's ordinal, as the driver counts it (the same as the runtime's).
CUdevice current_device() {
  int ordinal = 0;
  CUDA_CHECK(cudaGetDevice(&ordinal));
  CUDA_CHECK(cudaFree(nullptr));  // the runtime's context exists, so the driver calls have one
  CUdevice d = 0;
  check_cu(vmm().device_get(&d, ordinal), "cuDeviceGet");
  return d;
}

CUmemAllocationProp device_memory(CUdevice d) {
  CUmemAllocationProp prop{};
  prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
  prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  prop.location.id = static_cast<int>(d);
  return prop;
}

std::size_t round_up(std::size_t x, std::size_t to) { return (x + to - 1) / to * to; }

}  // namespace

std::string end_guard_unavailable() {
  const Vmm& v = vmm();
  if (!v.missing.empty())
    return "the driver gives no " + v.missing +
           " through the runtime: an array cannot be placed before an unmapped page";
  const CUdevice d = current_device();
  int supported = 0;
  check_cu(v.attribute(&supported, CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED, d),
           "cuDeviceGetAttribute(VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED)");
  if (supported == 0)
    return "this GPU has no virtual memory management: an array cannot be placed before an unmapped page";
  return "";
}

EndGuardedBytes::EndGuardedBytes(std::size_t bytes, int fill, std::size_t guard_bytes) : bytes_(bytes) {
  if (const std::string why = end_guard_unavailable(); !why.empty()) throw Skip(why);
  const Vmm& v = vmm();
  const CUdevice d = current_device();
  const CUmemAllocationProp prop = device_memory(d);
  std::size_t granule = 0;
  check_cu(v.granularity(&granule, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM), "cuMemGetAllocationGranularity");
  const std::size_t padded = round_up(bytes, 16);
  mapped_ = round_up(padded == 0 ? 16 : padded, granule);
  reserved_ = mapped_ + round_up(guard_bytes < granule ? granule : guard_bytes, granule);
  try {
    CUdeviceptr base = 0;
    check_cu(v.reserve(&base, reserved_, granule, 0, 0), "cuMemAddressReserve");
    base_ = base;
    CUmemGenericAllocationHandle handle = 0;
    check_cu(v.create(&handle, mapped_, &prop, 0), "cuMemCreate");
    handle_ = handle;
    check_cu(v.map(base, mapped_, 0, handle, 0), "cuMemMap");
    mapped_ok_ = true;
    CUmemAccessDesc access{};
    access.location = prop.location;
    access.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
    check_cu(v.set_access(base, mapped_, &access, 1), "cuMemSetAccess");
    // The array's end, rounded up to 16 bytes, is the mapped memory's end.
    char* const start = reinterpret_cast<char*>(static_cast<std::uintptr_t>(base));
    data_ = start + mapped_ - padded;
    slack_ = padded - bytes;
    CUDA_CHECK(cudaMemset(start, fill, mapped_));
    CUDA_CHECK(cudaDeviceSynchronize());  // lands before a kernel on a non-blocking stream
  } catch (...) {
    release();
    throw;
  }
}

EndGuardedBytes::~EndGuardedBytes() { release(); }

// Errors are ignored: after a kernel faulted on the guard, the context is gone and every
// call fails, and a destructor must not throw.
void EndGuardedBytes::release() noexcept {
  const Vmm& v = vmm();
  if (mapped_ok_) {
    (void)cudaDeviceSynchronize();  // nothing may still use the memory
    (void)v.unmap(static_cast<CUdeviceptr>(base_), mapped_);
    mapped_ok_ = false;
  }
  if (handle_ != 0) (void)v.release(static_cast<CUmemGenericAllocationHandle>(handle_));
  if (base_ != 0) (void)v.address_free(static_cast<CUdeviceptr>(base_), reserved_);
  base_ = 0;
  handle_ = 0;
  data_ = nullptr;
}

}  // namespace cml
