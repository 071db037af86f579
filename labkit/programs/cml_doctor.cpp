// What ./lab doctor reports about the GPU: the facts the chapters depend on, read through
// the same code the chapters use, and which chapters and steps it can run (needs.txt, as
// the tests read it). Exit 77 with the reason when there is no usable GPU.
//
//   ./lab doctor
#include "cml/cli.hpp"
#include "cml/device.hpp"
#include "cml/exit_codes.hpp"
#include "cml/needs.hpp"
#include "cml/program.hpp"

#include <cstdio>
#include <sstream>
#include <string>

namespace {

// One line a chapter: "every step", or which steps not and why.
void print_what_it_can_do(const cml::DeviceFacts& f) {
  std::printf("  what it can run (needs.txt):\n");
  std::istringstream chapters(CML_CHAPTERS);  // "01,02,...", from the build
  std::string ch;
  while (std::getline(chapters, ch, ',')) {
    const std::string whole = cml::needs::missing_for(ch, 0, f);
    if (!whole.empty()) {
      std::printf("    %s  no step: %s\n", ch.c_str(), whole.substr(whole.find(": ") + 2).c_str());
      continue;
    }
    std::string not_these;
    for (int step = 1; step <= cml::needs::last_named_step(ch); ++step) {
      const std::string why = cml::needs::missing_for(ch, step, f);
      if (!why.empty()) not_these += "\n        " + why;
    }
    std::printf("    %s  %s%s\n", ch.c_str(), not_these.empty() ? "every step" : "every step but:", not_these.c_str());
  }
}

}  // namespace

int main(int argc, char** argv) {
  return cml::run_program([&] {
    cml::Cli cli("cml_doctor", "Reports the GPU's facts that the course's chapters rely on.");
    if (!cli.parse(argc, argv)) return static_cast<int>(cml::kExitOk);
    const cml::DeviceFacts f = cml::select_device(cli.device());
    std::printf("%s", cml::describe(f).c_str());
    std::printf("  asyncEngineCount=%d (%s)\n", f.async_engine_count,
                f.async_engine_count >= 2   ? "copies in both directions can overlap each other and kernels"
                : f.async_engine_count == 1 ? "one copy at a time can overlap kernels"
                                            : "copies do not overlap kernels");
    std::printf("  managedMemory=%d  concurrentManagedAccess=%d  canMapHostMemory=%d\n", f.managed_memory,
                f.concurrent_managed_access, f.can_map_host_memory);
    std::printf("  shared memory per block (opt-in)=%d KiB  resident threads per SM=%d\n",
                f.shared_per_block_optin / 1024, f.threads_per_sm);
    std::printf("  L2=%zu MiB  free memory=%s of %s\n", f.l2_bytes >> 20, cml::format_bytes(f.free_bytes).c_str(),
                cml::format_bytes(f.total_bytes).c_str());
    std::printf("  DRAM peak (from attributes)=%.0f GB/s\n", f.dram_peak_gbps());
    print_what_it_can_do(f);
    return static_cast<int>(cml::kExitOk);
  });
}
