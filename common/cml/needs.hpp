// What each chapter's steps need of the GPU, as needs.txt (at the repository's root) says,
// written there once and compiled in: the tests skip a step whose need this GPU lacks, the
// doctor prints which steps it can do, the programs leave out what it cannot run. Every
// "needs compute capability 9.0; NVIDIA A100 is 8.0" of the course is composed here.
#pragma once

#include "device.hpp"

#include <string>
#include <vector>

namespace cml::needs {

// One need: a key of needs.txt (cc, copy_engines, map_host_memory, managed_memory,
// concurrent_managed_access, shared_per_block, threads_per_sm, gpus) and its value (cc: 80 for
// 8.0; shared_per_block: bytes; flags: 1), with what it is for.
struct Need {
  std::string key;
  int value = 1;
  std::string what;  // "asynchronous copies to shared memory (cp.async, LDGSTS)"
};

// A line of needs.txt: the need of one chapter's steps first..last (0..0: every step).
struct Entry {
  std::string chapter;  // "07"
  int first_step = 0, last_step = 0;
  Need need;
  bool covers(int step) const { return first_step == 0 || (step >= first_step && step <= last_step); }
};

// needs.txt's lines; throws std::invalid_argument naming the line of a malformed one.
std::vector<Entry> parse(const std::string& text);

// "cc=8.0" (and the like) as a need, with `what`; throws std::invalid_argument when it is
// not one.
Need parse_need(const std::string& spec, const std::string& what);

// The course's table: needs.txt as it was when the program was built.
const std::vector<Entry>& course();

// "two GPUs", "one GPU", "12 GPUs": a small count in words, as a sentence says it ("none"
// is "no GPUs").
std::string count_words(int n, const std::string& noun);

// "compute capability 8.0", "2 copy engines", "managed memory (managedMemory)"...
std::string describe(const Need& need);

// Whether the GPU has it.
bool met(const Need& need, const DeviceFacts& gpu);

// "" when the GPU has it; else why not, naming the GPU: "asynchronous copies to shared
// memory (cp.async, LDGSTS) need compute capability 8.0; Tesla T4 is 7.5".
std::string missing(const Need& need, const DeviceFacts& gpu);

// The needs of chapter `chapter`'s step `step` (the chapter's * lines and the step's own);
// step 0: the * lines only, what the whole chapter needs.
std::vector<Need> of(const std::string& chapter, int step, const std::vector<Entry>& table = course());

// The first of those the GPU lacks, as missing() says it, prefixed with the step: "step 4:
// ..." ("chapter 08: ..." for step 0); "" when it has them all.
std::string missing_for(const std::string& chapter, int step, const DeviceFacts& gpu,
                        const std::vector<Entry>& table = course());

// Throws cml::Skip with missing_for's reason when the GPU lacks a need of the step.
void require(const std::string& chapter, int step, const DeviceFacts& gpu);

// The steps of `chapter` that the table names (1..the largest K it names), for a listing.
int last_named_step(const std::string& chapter, const std::vector<Entry>& table = course());

}  // namespace cml::needs
