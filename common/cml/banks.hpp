// The bank model of shared memory: given the byte offsets the 32 threads of a warp touch
// with one shared-memory instruction (LDS/STS), which threads are active and the width of
// each access, it says how many transactions the instruction is split into, how many
// wavefronts (passes through the 32 banks) they take, and how many of those are conflicts.
// It predicts what Nsight Compute counts as l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld
// (or _st) and l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld (or _st) per instruction.
// Pure host code, tested on the CPU; chapter 05 checks it against ncu on the GPU.
//
// The rules, and where each comes from. They are a reading of the hardware, not a
// specification: where ncu disagrees, the rule is wrong and is fixed here, with the reason.
//  1. Banks (CUDA C++ Best Practices Guide §9.2.2.1; Programming Guide, compute capability
//     5.x and later): 32 banks, each 4 bytes wide; consecutive 4-byte words go to
//     consecutive banks, so word w lives in bank w % 32.
//  2. Broadcast and multicast (same sections): threads that touch the same 4-byte word are
//     served by one read of it, whatever their number; only *different* words in one bank
//     serialise. A transaction takes as many wavefronts as the most-used bank has distinct
//     words (an n-way conflict takes n).
//  3. Split by width (an NVIDIA forum answer, quoted by the course's source notes on LDS
//     widths: "the largest transaction size is 128 bytes"): a warp of 4-byte
//     (or narrower) accesses is one transaction; 8-byte accesses (LDS.64) are served per
//     half-warp (lanes 0-15, 16-31), 16-byte accesses (LDS.128) per quarter-warp (0-7, 8-15,
//     16-23, 24-31). A part with no active lane costs nothing.
//  4. Merging, for loads (same notes, from ncu experiments; and an NVIDIA forum answer
//     for compute capability 7.x, forums.developer.nvidia.com/t/77228: the load return
//     path carries 128 bytes a cycle, and packs two lanes' registers when their
//     addresses agree, "from 4 requests to 2" for LDS.128): the parts of one half-warp (for
//     8 bytes: the two half-warps) merge into one transaction when, over the whole warp,
//       (a) every active lane i has lane i^1 inactive or touching the same address, or
//       (b) every active lane i has lane i^2 inactive or touching the same address.
//     One rule must hold for the whole warp: one half meeting (a) and the other (b) do not
//     merge. Merged quarter-warps of 16-byte accesses form at most two transactions (one
//     per half-warp): halves never merge further ("no cascading"). Both sources speak of
//     loads, and the reason given is the return path: the model does not merge stores
//     (STS), a reading chapter 05's store experiments check.
//  5. Conflicts as ncu counts them: the wavefronts beyond one per transaction, so an
//     LDS.128 of a whole warp with its 4 wavefronts has 0 conflicts (as measured in
//     forums.developer.nvidia.com/t/359822: 32 wavefronts per LDS.128 counted as 28
//     conflicts, 4 as none).
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

namespace cml {

inline constexpr unsigned kBanks = 32;
inline constexpr unsigned kBankBytes = 4;

struct SharedAccess {
  std::array<std::uint32_t, 32> address{};  // byte offset in shared memory of each lane's access
  std::uint32_t active = 0xffffffffu;       // which lanes take part
  unsigned width = 4;                       // bytes per lane: 1, 2, 4, 8 or 16
  bool store = false;                       // STS: never merged (rule 4)
};

struct BankTransaction {
  std::uint32_t lanes = 0;  // active lanes it serves
  unsigned wavefronts = 0;  // passes through the banks: the most distinct words in one bank
  unsigned worst_bank = 0;  // a bank that needs that many
};

struct BankCount {
  unsigned transactions = 0;  // after the split by width and the merging
  unsigned wavefronts = 0;    // summed over the transactions
  unsigned conflicts = 0;     // wavefronts - transactions (ncu's bank conflicts)
  unsigned ways = 0;          // the worst transaction's wavefronts: 1 conflict-free, n for n-way
  bool merged = false;        // rule 4 joined parts of the warp
  std::vector<BankTransaction> detail;
};

// One warp-wide instruction. Throws std::invalid_argument for a width that is not 1, 2, 4,
// 8 or 16, or an address not aligned to its width (the hardware faults on those).
BankCount count_banks(const SharedAccess& access);

// The same, summed over instructions (a kernel's warps, or one warp's several accesses).
BankCount count_banks(const std::vector<SharedAccess>& accesses);

// Lane l accesses (loads, or stores) element `element(l)` of an array of `width`-byte
// elements starting at byte offset `base`.
template <typename F>
SharedAccess element_access(unsigned width, F element, std::uint32_t active = 0xffffffffu, std::uint32_t base = 0,
                            bool store = false) {
  SharedAccess a;
  a.width = width;
  a.active = active;
  a.store = store;
  for (unsigned l = 0; l < 32; ++l) a.address[l] = base + static_cast<std::uint32_t>(element(l)) * width;
  return a;
}

// "2 transactions, 8 wavefronts, 6 conflicts (4-way)": for the chapter's tables and messages.
std::string describe(const BankCount& count);

}  // namespace cml
