// Chapter 04 — --mode=permuted (docs/04, "Permuted lanes"): the Best Practices Guide's rule
// that lanes may read the words of their warp's 128-byte segment in any order and still
// cost 4 sectors, against a permutation that sends each lane to another warp's segment.
#pragma once

#include "harness.hpp"

#include "cml/run.hpp"

#include <cuda_runtime_api.h>

#include <cstddef>

namespace ch04 {

// Each permuted copy once over `arrays`, in the table's order: what ncu profiles.
void launch_permuted_copies(const Arrays& arrays, cudaStream_t stream);

// Checks every permuted copy against the CPU, times them interleaved on `stream`, reads
// their sectors per request with ncu (this program again with --mode=`profile_mode` and
// --size=`bytes`; one line says why when it cannot) and prints the table "permuted".
// Returns whether every copy was right.
bool run_permuted(const cml::Run& run, std::size_t bytes, const Arrays& arrays, cudaStream_t stream,
                  const char* profile_mode);

}  // namespace ch04
