// Chapter 06 — the other memory spaces (CUDA C++ Best Practices Guide §9.2: the table of
// spaces, local memory §9.2.3, texture §9.2.4, constant §9.2.5). Prints this GPU's memory
// spaces, then checks and times your three kernels beside the chapter's comparisons, with
// what the compiler made of each (registers, stack frame, LDL/STL, constant reads, TEX).
//
//   ./lab run 06                          the table, check, time, with resources and SASS
//   ./lab run 06 -- --degrees=30          the rotation's angle
//   ./lab check 06                        the tests; the compiled code's checks need no GPU
//
// This file parses, opens the run and dispatches; each mode is one function of
// program/modes.hpp.
#include "memory_spaces.cuh"
#include "program/modes.hpp"

#include "cml/exit_codes.hpp"
#include "cml/program.hpp"
#include "cml/run.hpp"

#include <algorithm>
#include <cstdint>
#include <vector>

namespace {

const std::vector<cml::Mode<ch06::Context>>& modes() {
  static const std::vector<cml::Mode<ch06::Context>> m = {
      {"table", "the memory spaces with this GPU's sizes", ch06::spaces_table},
      {"local", "step 1: the filter in local memory and in registers; a sort capped into spills", ch06::local_mode},
      {"constant", "step 2: the mix from constant memory (divergent, yours), global and __ldg", ch06::constant_mode},
      {"texture", "step 3: the rotation by hand and through your texture", ch06::texture_mode},
      {"latency", "one thread chasing indices through each space: cycles per dependent load, ordered (not in all)",
       ch06::latency_mode, false},
      {"linear-texture",
       "textures over linear and pitched memory, a surface written then read by the next launch (not in all)",
       ch06::linear_texture_mode, false},
  };
  return m;
}

int run(int argc, char** argv) {
  ch06::Settings s;
  cml::Cli cli =
      cml::chapter_cli("06",
                       "Chapter 06 - the other memory spaces: registers vs local memory and spills, constant "
                       "memory\nbroadcast vs divergent vs the read-only path, and a rotation through the "
                       "texture unit.",
                       modes(), s.mode);
  cli.integer("rows", s.rows, 1, 1 << 16, "step 1 and the spill sort: rows of the matrix")
      .integer("cols", s.cols, 1, 1 << 16, "step 1 and the spill sort: columns of the matrix")
      .integer("pixels", s.pixels, 1, 1 << 26, "step 2: pixels of 16 channels")
      .integer("side", s.side, 1, 1 << 14, "step 3: side of the rotated image")
      .integer("degrees", s.degrees, -360, 360, "step 3: the rotation's angle")
      .integer("steps", s.steps, 64, 1 << 20, "--mode=latency: dependent loads timed per chase");
  if (!cli.parse(argc, argv)) return cml::kExitOk;
  const std::uint64_t fir = 2ull * s.rows * s.cols * 4, mix = 2ull * s.pixels * ch06::kChannels * 4,
                      img = 2ull * s.side * s.side * 4 + 65536ull * s.side;
  // --mode=latency's chains are sized from the L2, so the footprint waits for the device.
  const auto footprint = [&](const cml::DeviceFacts& f) {
    return cml::Footprint{std::max({fir, mix, img, ch06::latency_footprint(f.l2_bytes)}),
                          "--rows x --cols, --pixels or --side (the largest), or --mode=latency's chains"};
  };
  ch06::Context c{s, cml::open_run(cli, footprint)};
  return cml::finish(cml::run_modes(modes(), s.mode, c));
}

}  // namespace

int main(int argc, char** argv) {
  return cml::run_program([&] { return run(argc, argv); });
}
