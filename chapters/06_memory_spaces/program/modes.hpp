// Chapter 06 — what the program's files share: its settings, the context every mode runs in,
// and the modes themselves, one function each: main.cu parses, opens and dispatches;
// program/spaces_table.cpp prints the table of spaces; program/steps.cpp checks and times
// each step beside its comparisons; program/code_report.cpp reads what the compiler made of
// each kernel; program/latency.cu and program/linear_texture.cu are the going-further
// modes (latency by pointer chasing; textures over linear and pitched memory, and a
// surface). The program's alone: the tests never include it.
#pragma once

#include "cml/run.hpp"
#include "cml/stream.hpp"

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace ch06 {

struct Settings {
  std::string mode = "all";
  int rows = 8192, cols = 8192;  // the filter's matrix (and the sort's)
  int pixels = 1 << 24;          // the mix's pixels
  int side = 4096;               // the rotated image's side
  int degrees = 30;
  int steps = 4096;  // --mode=latency: timed loads per chase
};

struct Context {
  const Settings& s;
  cml::Run run;
  cml::Stream stream{cudaStreamNonBlocking};
};

// --mode=table: the memory spaces, with this device's sizes.
bool spaces_table(Context& c);
// --mode=local, constant, texture: steps 1-3 (and register spills in local), each checked on
// the CPU and timed beside the chapter's comparisons.
bool local_mode(Context& c);
bool constant_mode(Context& c);
bool texture_mode(Context& c);
// --mode=latency (not in all): one thread chases a chain of indices through each memory
// space, clock64() around the dependent loads; the spaces ordered by cycles per load.
bool latency_mode(Context& c);
// The device memory --mode=latency allocates on a GPU with `l2_bytes` of L2 (its chains are
// sized from the L2).
std::uint64_t latency_footprint(std::size_t l2_bytes);
// --mode=linear-texture (not in all): textures over linear and pitched 2D memory, a surface
// written in one launch and read through a texture in the next, each checked on the CPU.
bool linear_texture_mode(Context& c);
// What the compiler made of this program's kernel `name` (ch06::name), read with cml::sass,
// as table cells: "REG r, STACK s, SHARED b" from cuobjdump -res-usage, and counts of SASS
// instructions, `what` naming them ("LDL", "STL", "LDS", "STS", "LDG", "TEX", "c[0x3][imm]",
// "c[0x3][R]", "LDG.E.CONSTANT", "other LDG"): "3 LDL, 0 STL". "-" when there is no such
// kernel; the reason in parentheses when cuobjdump cannot be run.
std::string compiler_cell(const std::string& name);
std::string sass_cell(const std::string& name, const std::vector<std::string>& what);
// The count of one `what` (as sass_cell counts it) in kernel `name`; nothing, and why, when
// cuobjdump cannot be run or the kernel is not in this program.
std::optional<std::size_t> sass_count(const std::string& name, const std::string& what, std::string& why);
// cudaFuncGetAttributes of `kernel` (what the runtime loaded): numRegs, localSizeBytes,
// sharedSizeBytes.
std::vector<std::string> runtime_cells(const void* kernel);

}  // namespace ch06
