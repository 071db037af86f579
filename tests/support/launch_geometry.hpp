// What a launcher launched, as the CUPTI trace recorded it: the grid and block of its one
// kernel, for the chapters whose contract fixes or bounds them. Checked at sizes where no
// cap hides a wrong grid (chapter 04's grid_for stops growing at a full GPU: any grid sized
// for too many or too few elements gives the same capped grid on a large array, which is
// where the speed tests run).
//
// Needs the trace: call it from [mechanism] cases after CML_REQUIRE_TRACING().
#pragma once

#include "gpu.hpp"

#include "cml/errors.hpp"
#include "cml/stream.hpp"
#include "cml/trace.hpp"

#include <cuda_runtime_api.h>

#include <array>
#include <cstdint>
#include <string>
#include <utility>

namespace cml::test {

// x * y * z of a grid or a block.
inline std::uint64_t volume(const std::array<std::int32_t, 3>& d) {
  return static_cast<std::uint64_t>(d[0]) * static_cast<std::uint64_t>(d[1]) * static_cast<std::uint64_t>(d[2]);
}

// True when only x is used (y == z == 1).
inline bool one_dimensional(const std::array<std::int32_t, 3>& d) { return d[1] == 1 && d[2] == 1; }

// "37 x 1 x 1"
inline std::string dims_text(const std::array<std::int32_t, 3>& d) {
  return std::to_string(d[0]) + " x " + std::to_string(d[1]) + " x " + std::to_string(d[2]);
}

// "a grid of 37 blocks (37 x 1 x 1) of 256 threads (256 x 1 x 1), 9472 threads in all"
inline std::string geometry_text(const cml::trace::KernelRecord& k) {
  return "a grid of " + std::to_string(volume(k.grid)) + " blocks (" + dims_text(k.grid) + ") of " +
         std::to_string(volume(k.block)) + " threads (" + dims_text(k.block) + "), " +
         std::to_string(volume(k.grid) * volume(k.block)) + " threads in all";
}

// ceil(a / b), b > 0.
inline std::uint64_t blocks_for(std::uint64_t items, std::uint64_t per_block) {
  return (items + per_block - 1) / per_block;
}

// The one launch a launcher made: its kernel's record, or why there is none to read.
struct Launched {
  std::string error;                // "" when `kernel` holds the launch
  cml::trace::KernelRecord kernel;  // its name, stream, grid and block
};

// Runs launch(stream) on a stream of its own under the CUPTI trace, and returns the record
// of the one kernel it launched. An error (the text says which) when the trace failed, or
// the launcher launched no kernel, or several, or none whose name contains `kernel_name`:
// the geometry of a launch is only read when the launch is the contract's one kernel.
template <class Launch>
Launched launched_kernel(const std::string& kernel_name, Launch&& launch) {
  Launched out;
  cml::Stream s;
  CUDA_CHECK(cudaDeviceSynchronize());  // nothing of the set-up in the recording
  cml::trace::Recorder recorder;
  std::forward<Launch>(launch)(s.get());
  s.synchronize();
  const cml::trace::Trace t = recorder.stop();
  if (!t.ok) {
    out.error = "the CUPTI trace failed, so the launch's grid cannot be read: " + t.error;
    return out;
  }
  if (t.kernels.size() != 1 || t.kernels[0].name.find(kernel_name) == std::string::npos) {
    std::string ran;
    for (const auto& k : t.kernels) ran += (ran.empty() ? "" : ", ") + k.name;
    out.error = "it launched " + std::to_string(t.kernels.size()) + " kernel(s)" +
                (ran.empty() ? std::string() : " (" + ran + ")") + "; want one launch of " + kernel_name +
                ", whose grid the contract sets";
    return out;
  }
  out.kernel = t.kernels[0];
  return out;
}

}  // namespace cml::test
