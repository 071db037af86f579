// Chapter 01 — what the program's files share: its settings, the context every mode runs in,
// and the modes that live outside main.cu: the three that take the Best Practices Guide's
// zero-copy section (§9.1.3) further than step 3 does. mapped_setup.cu: what this GPU and
// process say about mapped memory; mapped_access.cu: coalesced against strided reads of it;
// mapped_overlap.cu: a kernel that reads and writes host memory against copy, kernel, copy.
// main.cu parses, opens the run and dispatches. Program only: the tests never include it.
#pragma once

#include "cml/run.hpp"
#include "cml/stream.hpp"

#include <cstddef>
#include <string>

namespace ch01 {

struct Settings {
  std::string mode = "all";
  std::size_t max_bytes = 256ull << 20;
  std::size_t pieces = 1024;
  std::size_t piece_bytes = 4096;
  int reads = 8;
};

struct Context {
  Settings s;
  cml::Run run;
  cml::Stream stream{};  // created once open_run has selected the device
};

// --mode=mapped-setup: the attributes and flags that decide whether, and how, a kernel may
// use host memory; a cudaMallocHost allocation read by a kernel through its host pointer.
bool mapped_setup(Context& c);
// --mode=mapped-access: mapped host memory read coalesced, and the same bytes read with each
// lane of a warp in a different 128-byte line.
bool mapped_access(Context& c);
// --mode=mapped-overlap: a light kernel that reads its input from and writes its output to
// mapped host memory, against copy in, the kernel on device memory, copy out, on one stream.
bool mapped_overlap(Context& c);

}  // namespace ch01
