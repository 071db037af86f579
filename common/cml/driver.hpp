// The CUDA driver's functions, reached without linking the driver library: the course links
// the runtime only (libcuda is loaded by cudart in any case), and the runtime hands out
// driver entry points (cudaGetDriverEntryPointByVersion; CUDA 12.0-12.4 have only the
// unversioned lookup, which CUDA 13 deprecates).
#pragma once

namespace cml {

// The driver's function `name` with its signature as of CUDA `version` (1000 x major +
// 10 x minor: 12000 for 12.0), or nullptr where this driver has none or the lookup fails.
void* driver_entry_point(const char* name, int version) noexcept;

// The same, as the function pointer type of that version (cudaTypedefs.h's PFN_..._vNNNNN).
template <typename Fn>
Fn driver_function(const char* name, int version) noexcept {
  return reinterpret_cast<Fn>(driver_entry_point(name, version));
}

}  // namespace cml
