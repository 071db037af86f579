// Chapter 08 — the one 16-byte cp.async both --mode=entangled experiments issue in a branch
// (entangled_commits.cu, entangled_arrivals.cu). Branch 0 and 1 are written with different
// PTX text: the compiler may merge identical asm statements of two branches into one before
// the branch (for one thread they do the same thing), which would leave nothing diverged to
// measure. Device code: nvcc only.
#pragma once

#include "device.cuh"

#include <cstdint>

namespace ch08 {

template <int Branch>
__device__ __forceinline__ void copy_16_in_branch(void* dst, const void* src) {
  const std::uint32_t to = shared_address(dst);
  const auto from = __cvta_generic_to_global(src);
  if constexpr (Branch == 0)
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16; // first branch\n" ::"r"(to), "l"(from) : "memory");
  else
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16; // second branch\n" ::"r"(to), "l"(from) : "memory");
}

}  // namespace ch08
