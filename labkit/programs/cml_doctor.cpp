// What ./lab doctor reports about the GPU: the facts the chapters depend on, read through
// the same code the chapters use. Exit 77 with the reason when there is no usable GPU.
//
//   ./lab doctor
#include "cml/cli.hpp"
#include "cml/device.hpp"
#include "cml/exit_codes.hpp"
#include "cml/program.hpp"

#include <cstdio>

int main(int argc, char** argv) {
  return cml::run_program([&] {
    cml::Cli cli("cml_doctor", "Reports the GPU's facts that the course's chapters rely on.");
    if (!cli.parse(argc, argv)) return static_cast<int>(cml::kExitOk);
    const cml::DeviceFacts f = cml::select_device(cli.device());
    std::printf("%s", cml::describe(f).c_str());
    std::printf("  asyncEngineCount=%d (%s)\n", f.async_engine_count,
                f.async_engine_count >= 2 ? "copies in both directions can overlap each other and kernels"
                : f.async_engine_count == 1 ? "one copy at a time can overlap kernels"
                                            : "copies do not overlap kernels");
    std::printf("  managedMemory=%d  L2=%zu MiB  free memory=%s of %s\n", f.managed_memory,
                f.l2_bytes >> 20, cml::format_bytes(f.free_bytes).c_str(),
                cml::format_bytes(f.total_bytes).c_str());
    std::printf("  DRAM peak (from attributes)=%.0f GB/s\n", f.dram_peak_gbps());
    return static_cast<int>(cml::kExitOk);
  });
}
