// Chapter 04 — what each sweep kernel cost beyond L1: Nsight Compute runs this program's
// profile-target mode and reads the L2 requests and sectors its loads made and the bytes
// DRAM really moved, beside the bytes the copy wanted. The sector model counts L1 sectors;
// L2 and DRAM are where the time goes.
#pragma once

#include "harness.hpp"

#include "cml/run.hpp"

#include <cuda_runtime_api.h>

#include <cstddef>

namespace ch04 {

// Profiles the offset and stride sweeps over `bytes` (this program run again with
// --mode=`profile_mode` under ncu), times each sweep kernel on `stream`, and prints (and
// writes, with --out) the table "dram". Says why in one line when ncu cannot measure.
void print_sweep_counters(const cml::Run& run, std::size_t bytes, Arrays& arrays, cudaStream_t stream,
                          const char* profile_mode);

}  // namespace ch04
