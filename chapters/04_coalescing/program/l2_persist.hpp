// Chapter 04 — --mode=l2-persist (docs/04, "Keeping a table in L2"): a small table read
// over and over by a kernel that also streams a large array through L2, without and with an
// access policy window that asks L2 to keep the table (persisting) in a part of L2 set
// aside for it. Beyond the Best Practices Guide's §9.2.1, which this chapter follows.
#pragma once

#include "harness.hpp"

#include "cml/run.hpp"

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

namespace ch04 {

// The table's size in bytes: `requested` (--table; 0 asks for a quarter of the L2, at most
// what the device lets persist), rounded down to whole floats. Throws UsageError when it is
// smaller than 64 KiB or larger than the device's largest access policy window.
std::size_t l2_table_bytes(std::uint64_t requested, const cml::DeviceFacts& facts);

// The kernel once without the window, then once with it (where the device can set one):
// what ncu profiles.
void launch_l2_persist(const cml::Run& run, std::size_t table_bytes, const Arrays& arrays);

// Prints what the device reports about persisting L2, checks both runs against the CPU,
// times them interleaved, reads the L2 hit rate of the table's reads with ncu (this program
// again with --mode=`profile_mode`, --size=`bytes` and --table; one line says why when it
// cannot) and prints the table "l2_persist". The limit set aside is restored on return.
// Returns whether every run was right.
bool run_l2_persist(const cml::Run& run, std::size_t bytes, std::size_t table_bytes, const Arrays& arrays,
                    const char* profile_mode);

}  // namespace ch04
