// Chapter 01 — what the program's files share: its settings and the context every mode runs
// in. main.cu parses, opens the run and dispatches. Program only: the tests never include it.
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

}  // namespace ch01
