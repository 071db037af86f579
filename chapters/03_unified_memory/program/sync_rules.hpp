// Chapter 03 — which calls count as synchronisation for managed memory, and what the host
// may touch while a kernel runs (--mode=sync-rules), each shown by a run and checked:
//  - after a kernel on a stream, each way the CUDA Programming Guide names for learning that
//    it is done, then the chapter's host step on the kernel's managed data: the data against
//    the CPU, and the GPU's own mark of when the kernel finished against when the host began
//    (one way waits only for another stream that waited for the kernel: the dependency carries);
//  - a host function (cudaLaunchHostFunc) after the kernel that does the host step itself;
//  - while a long kernel runs: pinned and mapped memory, and, where concurrentManagedAccess
//    is 1, managed data the kernel does not use, written and read back by the host.
// What a GPU without concurrentManagedAccess would do is printed as the guide's statement,
// never run. Program only.
#pragma once

#include "cml/buffers.hpp"
#include "cml/run.hpp"

#include <cstddef>

namespace ch03 {

// Runs everything above on lanes of managed memory that together hold at most `bytes`
// (the run's --size, which open_run checked against the GPU's free memory). False when a
// result is wrong or a check fails.
bool sync_rules(const cml::Run& run, const cml::ManagedBuffer<unsigned>& table, std::size_t bytes);

}  // namespace ch03
