// Chapter 08 — --mode=entangled: whose groups does cp.async.wait_group count? Each kernel of
// entangled_commits.hpp copies the array, each thread committing one group per tile
// (converged, in two diverged branches, or reconverged first) and timing a wait_group 1
// that per-thread counting says returns at once; checked against the CPU, its commits read
// from this program's SASS, its wait's cycles averaged over each half of the warps, and the
// kernels timed interleaved. See modes.hpp.
#include "entangled_arrivals.hpp"
#include "entangled_commits.hpp"
#include "modes.hpp"
#include "own_code.hpp"

#include "cml/buffers.hpp"
#include "cml/errors.hpp"
#include "cml/table.hpp"
#include "cml/timing.hpp"

#include <cstdio>
#include <functional>
#include <string>
#include <vector>

namespace ch08 {

namespace {

using cml::fixed;

// "2 LDGDEPBAR; DEPBAR.LE SB0, 0x1": the kernel's commits and its timed wait, from this
// program's SASS (the first DEPBAR is the timed one; the second, wait_group 0, follows it).
std::string commits_cell(const CommitKind& k) {
  std::string why;
  const auto f = compiled(k.kernel, why);
  if (!f) return "(" + why.substr(0, 50) + ")";
  return std::to_string(cml::sass::count(*f, "LDGDEPBAR")) + " LDGDEPBAR; " +
         cml::sass::first_containing(*f, "DEPBAR.");
}

// Mean cycles of one timed wait, over the lanes of each half of the warps (0-15, 16-31).
struct HalfMeans {
  double low = 0, high = 0;
};
HalfMeans mean_wait(const std::vector<unsigned long long>& cycles, std::size_t pieces, int blocks) {
  double sum[2] = {0, 0}, waits[2] = {0, 0};
  for (int b = 0; b < blocks; ++b) {
    const double tiles = static_cast<double>(tiles_of_block(pieces, blocks, b));
    for (int t = 0; t < kThreads; ++t) {
      const int half = t % 32 < 16 ? 0 : 1;
      sum[half] += static_cast<double>(cycles[static_cast<std::size_t>(b) * kThreads + t]);
      waits[half] += tiles;
    }
  }
  return {waits[0] > 0 ? sum[0] / waits[0] : 0, waits[1] > 0 ? sum[1] / waits[1] : 0};
}

// One kernel of an experiment: it copies `pieces` pieces from `in` to `out` on `blocks` blocks,
// each thread writing its cycles to cycles[block * 256 + thread].
using CopyKernel = std::function<void(const Piece* in, std::size_t pieces, Piece* out, unsigned long long* cycles,
                                      int blocks, cudaStream_t stream)>;
struct Kernel {
  std::string name;  // as the checks print it
  CopyKernel copy;
};

// One checked run of a kernel: whether out == in, and the cycles it recorded.
bool run_checked(const Kernel& k, Pieces& a, int blocks, std::vector<unsigned long long>& cycles_out,
                 cudaStream_t stream, const std::string& what) {
  cml::DeviceBuffer<unsigned long long> cycles(static_cast<std::size_t>(blocks) * kThreads);
  const auto got =
      a.landed([&](cudaStream_t s) { k.copy(a.in.data(), a.count(), a.out.data(), cycles.data(), blocks, s); }, stream);
  cycles_out.resize(cycles.size());
  CUDA_CHECK(cudaMemcpy(cycles_out.data(), cycles.data(), cycles.bytes(), cudaMemcpyDeviceToHost));
  return same_words(got, a.host, k.name + ", " + what);
}

// Every kernel checked on every length of piece_cases(), a line for each that passed.
bool check_lengths(const std::vector<Kernel>& kernels, cudaStream_t stream) {
  bool ok = true;
  std::vector<unsigned long long> cycles;
  for (const auto& k : kernels) {
    bool kind_ok = true;
    for (const auto& pc : piece_cases()) {
      Pieces a(pc.pieces);
      kind_ok &= run_checked(k, a, pc.blocks, cycles, stream, std::to_string(pc.pieces) + " pieces");
    }
    if (kind_ok) std::printf("%s: PASSED on %zu lengths\n", k.name.c_str(), piece_cases().size());
    ok &= kind_ok;
  }
  return ok;
}

// The kernels timed interleaved on the timed array at `blocks` blocks.
std::vector<cml::Stats> time_kernels(const std::vector<Kernel>& kernels, Pieces& a, int blocks, Context& c) {
  cml::DeviceBuffer<unsigned long long> scratch(static_cast<std::size_t>(blocks) * kThreads);
  std::vector<cml::Work> work;
  for (const auto& k : kernels)
    work.push_back([&, k](cudaStream_t s) { k.copy(a.in.data(), a.count(), a.out.data(), scratch.data(), blocks, s); });
  return cml::time_interleaved(work, c.stream, c.run.timing);
}

// The second table: the arrive-on of each kernel of entangled_arrivals.hpp, checked on every
// length, then timed, with its cycles from the arrival to the phase's completion.
bool arrivals_table(Context& c) {
  std::printf(
      "\n== How many updates does a warp's arrive-on make? Each thread copies one piece per tile and arrives "
      "(cp.async.mbarrier.arrive.noinc) converged, in two branches, one lane at a time, or reconverged ==\n");
  std::vector<Kernel> kernels;
  for (const auto& k : arrival_kinds())
    kernels.push_back({k.name, [k](const Piece* in, std::size_t n, Piece* out, unsigned long long* cycles, int blocks,
                                   cudaStream_t s) { copy_arrivals(k, in, n, out, cycles, blocks, s); }});
  bool ok = check_lengths(kernels, c.stream);
  const int blocks = c.blocks(c.s.blocks_per_sm);
  Pieces a(c.s.size / sizeof(Piece));
  const auto st = time_kernels(kernels, a, blocks, c);
  cml::Table t("entangled_arrivals", {"arrive-on", "SASS: ARRIVES", "cycles to the phase, lanes 0-15", "lanes 16-31",
                                      "ms", "GB/s", "of the first row's time"});
  std::vector<unsigned long long> cycles;
  for (std::size_t i = 0; i < kernels.size(); ++i) {
    ok &= run_checked(kernels[i], a, blocks, cycles, c.stream, "the timed size");
    const HalfMeans m = mean_wait(cycles, a.count(), blocks);
    std::string why;
    const auto f = compiled(arrival_kinds()[i].kernel, why);
    t.row({kernels[i].name, f ? std::to_string(cml::sass::count(*f, "ARRIVES")) : "(" + why.substr(0, 40) + ")",
           fixed(m.low, 0), fixed(m.high, 0), cml::with_noise(st[i]),
           fixed(cml::gbps(2 * a.bytes(), st[i].median_ms), 0), fixed(st[0].median_ms / st[i].median_ms, 3)});
  }
  c.run.emit(t);
  std::printf(
      "(cycles: from the clock64 read before the thread's arrival to its seeing the phase complete, mean per "
      "tile; more than the first row's: the extra updates of a diverged warp cost time)\n");
  return ok;
}

}  // namespace

bool entangled_mode(Context& c) {
  std::printf(
      "\n== Whose groups does cp.async.wait_group count? Each thread commits one group per tile; then the timed "
      "wait_group 1 (per-thread counting: returns at once), then wait_group 0 ==\n");
  std::vector<Kernel> kernels;
  for (const auto& k : commit_kinds())
    kernels.push_back({std::string(k.name) + ", wait_group " + std::to_string(k.wait),
                       [k](const Piece* in, std::size_t n, Piece* out, unsigned long long* cycles, int blocks,
                           cudaStream_t s) { copy_entangled(k, in, n, out, cycles, blocks, s); }});
  bool ok = check_lengths(kernels, c.stream);
  const int blocks = c.blocks(c.s.blocks_per_sm);
  Pieces a(c.s.size / sizeof(Piece));
  const auto st = time_kernels(kernels, a, blocks, c);
  std::printf(
      "\n-- %s MiB, one tile of 4 KiB per block and round, %d blocks per SM; cycles: SM clock cycles between "
      "the clock64 reads around the timed wait, mean per wait, one more run of each kernel --\n",
      fixed(a.bytes() / 1048576.0, 0).c_str(), c.s.blocks_per_sm);
  cml::Table t("entangled", {"commit", "timed wait", "SASS: commits; the timed wait", "cycles, lanes 0-15",
                             "cycles, lanes 16-31", "ms", "GB/s", "of the first row's time"});
  std::vector<unsigned long long> cycles;
  for (std::size_t i = 0; i < commit_kinds().size(); ++i) {
    const auto& k = commit_kinds()[i];
    ok &= run_checked(kernels[i], a, blocks, cycles, c.stream, "the timed size");
    const HalfMeans m = mean_wait(cycles, a.count(), blocks);
    t.row({k.name, "wait_group " + std::to_string(k.wait), commits_cell(k), fixed(m.low, 0), fixed(m.high, 0),
           cml::with_noise(st[i]), fixed(cml::gbps(2 * a.bytes(), st[i].median_ms), 0),
           fixed(st[0].median_ms / st[i].median_ms, 3)});
  }
  c.run.emit(t);
  std::printf(
      "(the last row waits for the tile's own group: its cycles are what waiting for one copy costs. A row "
      "near it with wait_group 1 waited for a group that counting per thread would have left in flight)\n");
  return arrivals_table(c) && ok;
}

}  // namespace ch08
