// Chapter 06 — the table of memory spaces (CUDA C++ Best Practices Guide §9.2) with this
// device's own sizes; entries marked [arch] are architecture constants the device does not
// report.
//
//   ./lab run 06 -- --mode=table
#include "modes.hpp"

#include "cml/errors.hpp"
#include "cml/table.hpp"

#include <cstdio>
#include <string>

namespace ch06 {

namespace {
std::string kib(std::size_t bytes) { return std::to_string(bytes / 1024) + " KiB"; }
}  // namespace

bool spaces_table(Context& c) {
  cudaDeviceProp p{};
  CUDA_CHECK(cudaGetDeviceProperties(&p, c.run.facts.index));
  std::printf(
      "\n== Memory spaces on %s (sizes: this device's properties; [arch] = architecture constant, not "
      "reported by the device) ==\n",
      p.name);
  cml::Table t("memory_spaces", {"space", "where", "cached", "access", "scope", "lifetime", "size here"});
  t.row({"register", "on chip (SM register file)", "n/a", "R/W", "1 thread", "thread",
         std::to_string(p.regsPerMultiprocessor) + " x 32-bit per SM, " + std::to_string(p.regsPerBlock) +
             " per block; 255 per thread [arch]"});
  t.row(
      {"local", "device memory", "L1 and L2", "R/W", "1 thread", "thread",
       "up to 512 KiB per thread [arch]; L1 cache for local: " + std::string(p.localL1CacheSupported ? "yes" : "no")});
  t.row({"shared", "on chip (with L1)", "n/a", "R/W", "all threads in block", "block",
         kib(p.sharedMemPerBlock) + " per block (" + kib(p.sharedMemPerBlockOptin) + " opt-in), " +
             kib(p.sharedMemPerMultiprocessor) + " per SM; L1 + shared 256 KiB per SM on sm_90 [arch]"});
  t.row({"global", "device memory", "L2 (and L1 for loads)", "R/W", "all threads + host", "host allocation",
         std::to_string(p.totalGlobalMem >> 20) + " MiB, L2 " + kib(p.l2CacheSize)});
  t.row({"constant", "device memory", "constant cache", "R", "all threads + host", "host allocation",
         kib(p.totalConstMem) + " (one address per warp per cycle: broadcast)"});
  t.row({"texture", "device memory", "L1/texture cache", "R", "all threads + host", "host allocation",
         "2D up to " + std::to_string(p.maxTexture2D[0]) + " x " + std::to_string(p.maxTexture2D[1]) +
             " texels; pitch alignment " + std::to_string(p.texturePitchAlignment) + " bytes"});
  c.run.emit(t);
  return true;
}

}  // namespace ch06
