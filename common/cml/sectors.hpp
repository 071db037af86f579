// The sector model of global memory access: a warp's load or store is served in 32-byte
// sectors, grouped in 128-byte cache lines. Given the addresses the 32 threads of a warp
// touch with one instruction, and the width of each access, it says how many sectors and
// lines the instruction touches, how many bytes move, and how many of them were wanted.
// It predicts L1's sectors per request (what ncu's l1tex__t_sectors / l1tex__t_requests
// count), not DRAM traffic: L2 absorbs some of a misaligned access's extra sectors.
// Pure host code, tested on the CPU.
#pragma once

#include <array>
#include <cstdint>
#include <vector>

namespace cml {

struct WarpAccess {
  std::array<std::uint64_t, 32> address{};  // byte address of each thread's access
  std::uint32_t active = 0xffffffffu;       // which threads take part
  unsigned width = 4;                       // bytes per thread: 1, 2, 4, 8 or 16
};

struct SectorCount {
  unsigned sectors = 0;         // distinct 32-byte sectors touched
  unsigned lines = 0;           // distinct 128-byte lines touched
  std::uint64_t requested = 0;  // active threads x width
  std::uint64_t unique = 0;     // distinct bytes touched (a broadcast counts once)
  std::uint64_t moved = 0;      // sectors x 32
  double efficiency() const { return moved ? static_cast<double>(unique) / static_cast<double>(moved) : 0.0; }
};

// One warp-wide instruction. Throws std::invalid_argument for a width that is not 1, 2, 4,
// 8 or 16, or an address not aligned to its width (the hardware faults on those).
SectorCount count_sectors(const WarpAccess& access);

// The access of warp `warp` in a kernel where thread i touches element
// (i * stride + offset) of an array of `elem_bytes`-byte elements starting at `base`.
WarpAccess strided_access(std::uint64_t base, std::uint64_t warp, std::uint64_t stride, std::uint64_t offset,
                          unsigned elem_bytes);

// Sectors per request averaged over `warps` consecutive warps of that kernel (a misaligned
// offset touches an extra sector in some warps only when lines and warps do not line up).
double sectors_per_request(std::uint64_t base, std::uint64_t warps, std::uint64_t stride, std::uint64_t offset,
                           unsigned elem_bytes);

// The fraction of moved bytes that were wanted, over the same warps.
double efficiency(std::uint64_t base, std::uint64_t warps, std::uint64_t stride, std::uint64_t offset,
                  unsigned elem_bytes);

}  // namespace cml
