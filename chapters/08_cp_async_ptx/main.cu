// Chapter 08 — cp.async in PTX (PTX ISA, "Data Movement and Conversion Instructions:
// cp.async", and the source notes on it), then Hopper's bulk copies on an mbarrier and the
// tensor memory accelerator: the tile copy at every width and cache level, the source's
// experiment, and chapter 07's pipeline written by hand in PTX — checked against the CPU,
// timed beside chapter 07's cuda::pipeline and a read-only kernel in the same run.
//
//   ./lab run 08                                    everything this GPU can run
//   ./lab run 08 -- --mode=reverse                  the experiment, and what a missing barrier does
//   ./lab run 08 -- --mode=variants --stages=2 --blocks-per-sm=2
//   ./lab run 08 -- --mode=tma --cols=8191          sm_90: a pitched matrix through TMA
//   ./lab bench 08 -- --mode=sweep                  stages x blocks per SM: sweep.csv, sweep.png
//   ./lab run 08 -- --mode=cache-hints              cp.async's L2 policies, prefetch sizes, ignore-src
//   ./lab run 08 -- --mode=entangled                diverged commits and what a later wait waits for
#include "program/modes.hpp"
#include "program/pieces.hpp"

#include "cml/errors.hpp"
#include "cml/exit_codes.hpp"
#include "cml/needs.hpp"
#include "cml/program.hpp"
#include "cml/run.hpp"

#include <string>
#include <vector>

namespace {

using ch08::Context;

const std::vector<cml::Mode<Context>>& modes() {
  static const std::vector<cml::Mode<Context>> m = {
      {"copy", "the tile copy at 4, 8, 16 bytes (.ca) and 16 (.cg), ragged ends zero-filled; timed beside cudaMemcpy",
       ch08::copy_mode},
      {"reverse", "the source's experiment, 32 threads: a[31 - t] -> shared[t] -> b[t]; then a neighbour's element",
       ch08::reverse_mode},
      {"check", "every pipeline against the CPU, sizes not multiples of 4, the tile or the stages", ch08::check_mode},
      {"variants",
       "time the pipelines beside chapter 07's, register staging and read-only at --size, --stages, "
       "--compute, --blocks-per-sm",
       ch08::variants_mode},
      {"tma", "sm_90: a pitched matrix of --cols words per row through the tensor memory accelerator", ch08::tma_mode},
      {"sweep", "every pipeline at stages 1-4 x 1-8 blocks per SM, at --compute (sweep.csv)", ch08::sweep_mode, false},
      {"cache-hints",
       "16-byte cp.async.cg with an L2 cache policy (evict_first, evict_last), an L2 prefetch size, "
       "and ignore-src on half of the pieces; checked, timed beside cudaMemcpy",
       ch08::cache_hints_mode, false},
      {"entangled",
       "lanes 0-15 and 16-31 committing cp.async groups in two branches against one converged commit: "
       "the cycles of a later wait_group 1, checked and timed",
       ch08::entangled_mode, false},
  };
  return m;
}

std::vector<std::string> variant_names() {
  std::vector<std::string> names = {"all"};
  for (const auto& v : ch08::variants()) names.emplace_back(v.name);
  names.emplace_back("tma");
  return names;
}

int run(int argc, char** argv) {
  ch08::Settings s;
  cml::Cli cli = cml::chapter_cli("08",
                                  "Chapter 08 - cp.async in PTX (.ca/.cg, src-size zero fill, commit/wait groups), "
                                  "bulk copies on an\nmbarrier and TMA (sm_90), timed beside chapter 07's "
                                  "cuda::pipeline.",
                                  modes(), s.mode);
  cli.choice("variant", s.variant, variant_names(), "which pipeline --mode=variants times (with its references)")
      .size("size", s.size, 4, 1ull << 40, "bytes of the array, and of --mode=tma's matrix (K, M, G are binary)")
      .integer("stages", s.stages, 1, ch08::kMaxStages, "tiles in flight per block (1-4)")
      .integer("compute", s.compute, 0, 1 << 16, "dependent multiply-adds per word (0: copy-bound)")
      .integer("blocks-per-sm", s.blocks_per_sm, 1, 32, "the grid, in blocks per SM (occupancy)")
      .integer("cols", s.cols, 1, 1 << 24,
               "--mode=tma: words per row of the matrix (8191: not a multiple of 16 bytes)");
  if (!cli.parse(argc, argv)) return cml::kExitOk;
  if (s.size % sizeof(ch08::Word) != 0) throw cml::UsageError("--size must be a multiple of 4 bytes (whole words)");
  if ((s.mode == "cache-hints" || s.mode == "entangled") && s.size % sizeof(ch08::Piece) != 0)
    throw cml::UsageError("--mode=" + s.mode + " copies 16-byte pieces: --size must be a multiple of 16 bytes");
  if (s.mode == "tma" && s.size < s.cols * 16 * sizeof(ch08::Word))
    throw cml::UsageError("--size must hold at least 16 rows of --cols words for --mode=tma");
  Context c{s, cml::open_run(cli, cml::Footprint{2 * s.size, "--size (the array and a copy of it)"})};
  cml::needs::require("08", 0, c.run.facts);  // the whole chapter: cp.async (needs.txt)
  if (s.variant == "bulk" || s.variant == "tma") c.require_sm90("--variant=" + s.variant);
  return cml::finish(cml::run_modes(modes(), s.mode, c));
}

}  // namespace

int main(int argc, char** argv) {
  return cml::run_program([&] { return run(argc, argv); });
}
