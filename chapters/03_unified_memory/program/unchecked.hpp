// Chapter 03 — what CUDA does not check about managed memory (--mode=unchecked), each shown by
// a run:
//  - kernels of two streams that use the same managed words at once race, as with ordinary
//    device memory: the same two kernels ordered (one stream, or an event between two) come
//    out exact, unordered they may lose updates, and the run counts how many;
//  - a __managed__ variable: managed memory with no allocation call, visible to every
//    stream's kernels from the start (attached global, as cudaMallocManaged's default is);
//  - the attach promise: a buffer attached to one stream (cudaMemAttachSingle) and then used
//    by a kernel on another: CUDA raises no error and the writes land; keeping the promise
//    is the program's job (run only where concurrentManagedAccess = 1).
// Not in a plain run: it measures nothing for the figures, and its unordered row is a
// deliberate race. Program only.
#pragma once

#include "cml/run.hpp"

namespace ch03 {

// Runs everything above; false when an ordered result is wrong or CUDA fails.
bool unchecked(const cml::Run& run);

}  // namespace ch03
