// Shared memory filled with a known word before a checked run, so that a kernel that reads a
// tile before it was filled adds that word (garbage, NaN) instead of the right values a
// previous run left behind. Chapters 08 and 09 run it before their checks.
#pragma once

#include <cuda_runtime_api.h>

namespace cml {

// Enqueues, on `stream`, blocks of the largest dynamic shared memory a block may have (the
// opt-in maximum), two per SM's worth, each writing `word` ^ i into its word i (i < 2^16:
// a quiet NaN's pattern stays a NaN, its payload varies). The scheduler
// promises no placement, so this does not guarantee that every SM gets one; in practice
// blocks of this size spread one or two per SM, and each covers all of its SM's shared
// memory but the 1 KiB reserved per block.
void scrub_shared_memory(cudaStream_t stream, unsigned word);

}  // namespace cml
