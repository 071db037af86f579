// Chapter 04 — --mode=permuted: copies whose lanes read in another order than their
// thread index (docs/04, "Permuted lanes"). A warp's 32 floats are one 128-byte segment; the
// Best Practices Guide (§9.2.1.1) says a warp is served by the 32-byte sectors its lanes
// touch, whatever lane reads which word, so a permutation inside the segment costs the same
// 4 sectors as the in-order copy. What costs is the number of segments one warp touches:
// send each lane to another warp's segment and the same bytes take 32 sectors per request.
#include "permuted.hpp"

#include "checked.hpp"
#include "coalescing.cuh"

#include "cml/errors.hpp"
#include "cml/ncu.hpp"
#include "cml/sass.hpp"
#include "cml/sectors.hpp"
#include "cml/table.hpp"
#include "cml/timing.hpp"

#include <algorithm>
#include <cstdio>
#include <random>
#include <string>
#include <utility>
#include <vector>

namespace ch04 {

namespace {

using cml::fixed;

// A permutation moves words within groups of 32 segments (32 warps x 32 floats), so the copy
// stays a one-to-one copy of the whole array: n must be a multiple of kGroup.
constexpr unsigned kGroup = 32 * 32;

// Lane l of warp w (w counted within its group) reads word (32 w + word[l]) mod kGroup of
// its group: word[l] = l is the in-order copy, word[l] < 32 stays in the warp's own segment.
struct LaneMap {
  unsigned short word[32];
};

__global__ void permuted_copy(const float* __restrict__ in, float* __restrict__ out, std::size_t n, LaneMap map) {
  // The grid-stride step is a multiple of 32 (256-thread blocks), so a thread keeps its lane
  // and reads its entry of the map once.
  const std::size_t step = static_cast<std::size_t>(gridDim.x) * blockDim.x;
  const unsigned lane = threadIdx.x % 32;
  const std::size_t delta = (map.word[lane] + kGroup - lane) % kGroup;
  for (std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; i < n; i += step)
    out[i] = in[(i & ~std::size_t{kGroup - 1}) | ((i + delta) & (kGroup - 1))];
}

struct Permutation {
  std::string reads;  // what lane l reads, for the table
  LaneMap map;
};

LaneMap lane_map(unsigned (*word)(unsigned)) {
  LaneMap m{};
  for (unsigned l = 0; l < 32; ++l) m.word[l] = static_cast<unsigned short>(word(l));
  return m;
}

// A fixed pseudo-random order of the 32 words (Fisher-Yates on minstd_rand, whose sequence
// the standard fixes): the same permutation on every run and machine.
LaneMap shuffled() {
  LaneMap m = lane_map([](unsigned l) { return l; });
  std::minstd_rand rng(24);
  for (unsigned k = 31; k > 0; --k) std::swap(m.word[k], m.word[rng() % (k + 1)]);
  return m;
}

const std::vector<Permutation>& permutations() {
  static const std::vector<Permutation> all = {
      {"in order: word l of its segment", lane_map([](unsigned l) { return l; })},
      {"reversed: word 31 - l of its segment", lane_map([](unsigned l) { return 31 - l; })},
      {"shuffled: word p(l) of its segment", shuffled()},
      {"across, whole: word l of the next warp's segment", lane_map([](unsigned l) { return 32 + l; })},
      {"across, scattered: word l of the segment l warps on", lane_map([](unsigned l) { return 33 * l; })},
  };
  return all;
}

// The source word of output element i, written apart from the kernel's bit arithmetic.
std::size_t source_of(const LaneMap& m, std::size_t i) {
  const std::size_t group = i / kGroup, warp = i / 32 % 32, lane = i % 32;
  return group * kGroup + (32 * warp + m.word[lane]) % kGroup;
}

// The sector model's sectors per request, averaged over the 32 warps of a group.
double model_sectors(const LaneMap& m) {
  unsigned sectors = 0;
  for (std::size_t w = 0; w < 32; ++w) {
    cml::WarpAccess a;
    for (std::size_t l = 0; l < 32; ++l) a.address[l] = 4 * source_of(m, 32 * w + l);
    sectors += cml::count_sectors(a).sectors;
  }
  return sectors / 32.0;
}

std::size_t permuted_n(const Arrays& arrays) { return arrays.in.size() / kGroup * kGroup; }

void launch(const LaneMap& map, const Arrays& arrays, std::size_t n, cudaStream_t stream) {
  permuted_copy<<<grid_for(n), 256, 0, stream>>>(arrays.in.data(), arrays.out.data(), n, map);
  CUDA_CHECK_LAUNCH();
}

const std::vector<std::string> kMetrics = {"l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum",
                                           "l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum",
                                           "lts__t_sectors_srcunit_tex_op_read.sum", "dram__bytes_read.sum"};

}  // namespace

void launch_permuted_copies(const Arrays& arrays, cudaStream_t stream) {
  for (const Permutation& p : permutations()) launch(p.map, arrays, permuted_n(arrays), stream);
  CUDA_CHECK(cudaStreamSynchronize(stream));
}

bool run_permuted(const cml::Run& run, std::size_t bytes, const Arrays& arrays, cudaStream_t stream,
                  const char* profile_mode) {
  const std::size_t n = permuted_n(arrays);
  const auto& perms = permutations();
  std::printf("\n== Lanes reading their warp's 128 bytes out of order, and other warps' (copy of %s) ==\n",
              cml::format_bytes(n * 4).c_str());
  std::printf("p(l) for lanes 0..31:");
  for (unsigned short w : perms[2].map.word) std::printf(" %u", w);
  std::printf("\n");

  bool ok = true;
  std::vector<cml::Work> works;
  for (const Permutation& p : perms) {
    const cml::Work w = [&arrays, n, map = p.map](cudaStream_t st) { launch(map, arrays, n, st); };
    ok &= run_checked(
        arrays, stream, w,
        [&] { return arrays.verify(n, [&](std::size_t i) { return arrays.host[source_of(p.map, i)]; }); }, p.reads);
    works.push_back(w);
  }
  const std::vector<cml::Stats> st = cml::time_interleaved(works, stream, run.timing);

  const auto r = cml::ncu::profile({cml::sass::self_executable(), std::string("--mode=") + profile_mode,
                                    "--size=" + std::to_string(bytes), "--device=" + std::to_string(run.facts.index)},
                                   "permuted_copy", kMetrics, {"CML_TRACE=off"});
  const bool counted = r.ok && r.kernels.size() == perms.size();
  const auto value = [&](std::size_t k, std::size_t m) {
    const auto& v = r.kernels[k].values;
    return v.count(kMetrics[m]) ? v.at(kMetrics[m]) : 0.0;
  };
  cml::Table t("permuted", {"lane l reads", "ms", "noise", "GB/s", "speed over in order", "model sectors/request",
                            "ncu L1 sectors/request", "ncu L2 sectors/request", "ncu DRAM read / wanted"});
  for (std::size_t k = 0; k < perms.size(); ++k) {
    const double requests = counted ? value(k, 0) : 0;
    const auto per_request = [&](std::size_t m) { return requests > 0 ? fixed(value(k, m) / requests, 2) : "-"; };
    t.row({perms[k].reads, fixed(st[k].median_ms, 3), cml::format_noise(st[k]),
           fixed(cml::gbps(2 * n * 4, st[k].median_ms), 0), cml::ratio_text(st[0], st[k]),
           fixed(model_sectors(perms[k].map), 2), per_request(1), per_request(2),
           counted ? fixed(value(k, 3) / (4.0 * n), 3) : "-"});
  }
  run.emit(t);
  if (!r.ok)
    std::printf("(ncu columns not measured: %s)\n", r.error.c_str());
  else if (!counted)
    std::printf("(ncu profiled %zu kernels, %zu expected: its columns not shown)\n", r.kernels.size(), perms.size());
  std::printf("(requests: warp-wide loads; GB/s: bytes read + written over the time; the writes are in order)\n");
  return ok;
}

}  // namespace ch04
