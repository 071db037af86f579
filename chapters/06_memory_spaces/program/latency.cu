// Chapter 06 — the memory spaces ordered by latency (Best Practices Guide §9.2 orders them
// global > local > texture >> constant > shared > register). One thread chases a chain of
// indices (chain.hpp) through each space: every load's address is the previous load's
// value, so nothing overlaps, and clock64() around --steps loads gives the cycles of one.
// Each chase must end where the CPU says it does, and each kernel's SASS must load with the
// instruction its row names (LDS, LDL, c[0x3][R...], LDG with its cache hint, TEX/TLD).
// docs/06_memory_spaces.md, "Latency of each space".
//
//   ./lab run 06 -- --mode=latency --steps=4096
#include "chain.hpp"
#include "harness.hpp"
#include "modes.hpp"
#include "textures.hpp"

#include "cml/buffers.hpp"
#include "cml/cli.hpp"
#include "cml/errors.hpp"
#include "cml/table.hpp"
#include "cml/timing.hpp"

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <string>
#include <vector>

namespace ch06 {

// ---- Sizes ------------------------------------------------------------------------------

namespace {

// Shared, constant and local memory: 64 words, dense (256 bytes: cached after one lap).
constexpr int kSmallNodes = 64;
// One node per 128-byte line for the global chains, so no two nodes share a line.
constexpr std::size_t kLineWords = 32;
// Device memory: nodes 256 bytes apart, beyond the 128-byte line and whatever is fetched
// with it, in a chain at least 4 times the L2; a random order defeats any prefetch.
constexpr std::size_t kDramStrideWords = 64;

struct Sizes {
  std::uint64_t l2_chain, dram_chain, flush;
};

// The L2 chain: larger than any L1 (256 KiB per SM on sm_90) and a quarter of the L2 at
// most; device memory: 256 MiB or 4 x the L2, the larger; the flush that evicts the chain
// before each run of the device-memory row: 2 x the L2.
Sizes sizes(std::size_t l2) {
  const std::uint64_t l2_bytes = l2 > 0 ? l2 : (32ull << 20);
  return {std::min<std::uint64_t>(4ull << 20, l2_bytes / 4), std::max<std::uint64_t>(256ull << 20, 4 * l2_bytes),
          2 * l2_bytes};
}

}  // namespace

std::uint64_t latency_footprint(std::size_t l2_bytes) {
  const Sizes s = sizes(l2_bytes);
  return s.l2_chain + s.dram_chain + s.flush + (1ull << 20);
}

// ---- Kernels: one thread, one chase each -------------------------------------------------
// In namespace ch06 (not an anonymous one): code_report.cpp finds them by name in the SASS.

struct ChaseResult {
  long long cycles;
  std::uint32_t end, unused;
};

// `warm` loads first (one lap: every node is where the row says it is), then `steps` loads
// between two reads of the SM's cycle counter. The loads depend on each other, so the
// counter sees their latencies one after the other; the index-to-address arithmetic (an
// instruction or two, the same in every row) is inside each step.
template <class Load>
__device__ __forceinline__ void chase(Load load, int warm, int steps, ChaseResult* out) {
  std::uint32_t j = 0;
  for (int i = 0; i < warm; ++i) j = load(j);
  const long long start = clock64();
#pragma unroll 4
  for (int i = 0; i < steps; ++i) j = load(j);
  const long long stop = clock64();
  out->cycles = stop - start;
  out->end = j;
}

// Shared memory: the chain copied into __shared__ (one thread: it sees its own stores).
__global__ void chase_shared_kernel(const std::uint32_t* __restrict__ chain, int warm, int steps, ChaseResult* out) {
  __shared__ std::uint32_t s[kSmallNodes];
  for (int i = 0; i < kSmallNodes; ++i) s[i] = chain[i];
  chase([&](std::uint32_t j) { return s[j]; }, warm, steps, out);
}

// Local memory: a per-thread array read at an index known only at run time cannot live in
// registers (they have no addresses): it is the thread's stack frame, LDL in SASS.
__global__ void chase_local_kernel(const std::uint32_t* __restrict__ chain, int warm, int steps, ChaseResult* out) {
  std::uint32_t a[kSmallNodes];
  for (int i = 0; i < kSmallNodes; ++i) a[i] = chain[i];
  chase([&](std::uint32_t j) { return a[j]; }, warm, steps, out);
}

// Constant memory: this file's own copy of the chain (each translation unit has its own),
// read at a per-thread index: LDC R, c[0x3][R...].
__constant__ std::uint32_t c_chain[kSmallNodes];

__global__ void chase_constant_kernel(int warm, int steps, ChaseResult* out) {
  chase([](std::uint32_t j) { return c_chain[j]; }, warm, steps, out);
}

// Global memory with a cache hint: __ldca (ld.global.ca, cached in L1 and L2), __ldcg
// (ld.global.cg, L2 only: L1 is never asked), __ldg (the read-only path).
__global__ void chase_ca_kernel(const std::uint32_t* chain, int warm, int steps, ChaseResult* out) {
  chase([chain](std::uint32_t j) { return __ldca(chain + j); }, warm, steps, out);
}
__global__ void chase_cg_kernel(const std::uint32_t* chain, int warm, int steps, ChaseResult* out) {
  chase([chain](std::uint32_t j) { return __ldcg(chain + j); }, warm, steps, out);
}
__global__ void chase_ldg_kernel(const std::uint32_t* chain, int warm, int steps, ChaseResult* out) {
  chase([chain](std::uint32_t j) { return __ldg(chain + j); }, warm, steps, out);
}

// The texture unit: tex1Dfetch over linear memory (an integer index, no filtering).
__global__ void chase_texture_kernel(cudaTextureObject_t tex, int warm, int steps, ChaseResult* out) {
  chase([tex](std::uint32_t j) { return tex1Dfetch<unsigned>(tex, static_cast<int>(j)); }, warm, steps, out);
}

// ---- The mode -----------------------------------------------------------------------------

namespace {

using Launch = std::function<void(int warm, int steps, ChaseResult* out, cudaStream_t)>;

struct Space {
  std::string space, load;
  const char* kernel;
  const char* sass;    // the instruction its chase must load with, as sass_cell counts it
  const Chain* chain;  // what the GPU chases, for the CPU's prediction
  // true: one lap before the clock starts, so every node is cached where the row says;
  // false (device memory): no lap, and the L2 flushed before each run.
  bool cached;
  Launch launch;
};

struct Measured {
  const Space* space;
  cml::Stats cycles;  // summarize() is unit-free: here, cycles per load
  std::string sass;
};

// cudaDevAttrClockRate: the SM's peak clock in kHz (CUDA 13 took clockRate out of
// cudaDeviceProp; the attribute stays). A device or driver may answer 0 or an error: then
// the table gives cycles only, and says so.
int peak_clock_khz(int device) {
  int khz = 0;
  if (cudaDeviceGetAttribute(&khz, cudaDevAttrClockRate, device) != cudaSuccess) {
    (void)cudaGetLastError();  // not sticky; clear it so no later check reports it
    return 0;
  }
  return khz;
}

std::string chain_text(const Chain& c) {
  return std::to_string(c.nodes) + " nodes, " + std::to_string(c.stride * 4) + " B apart (" +
         cml::format_bytes(c.bytes()) + ")";
}

std::uint32_t* upload_chain(cml::DeviceBuffer<std::uint32_t>& d, const Chain& c, cudaStream_t stream) {
  d = cml::DeviceBuffer<std::uint32_t>(c.words.size());
  CUDA_CHECK(cudaMemcpyAsync(d.data(), c.words.data(), c.bytes(), cudaMemcpyHostToDevice, stream));
  return d.data();
}

// Warm-up and timed runs of one row, each checked: false (and the reason printed) when a
// chase ends anywhere but where the CPU says. For a row that is not cached, `flush` (twice
// the L2) is overwritten before every run, which evicts the chain from the L2.
bool measure(Context& c, const Space& sp, int steps, cml::DeviceBuffer<unsigned char>& flush, cml::Stats& out) {
  cml::DeviceBuffer<ChaseResult> result(1);
  const int warm = sp.cached ? static_cast<int>(sp.chain->nodes) : 0;
  const std::uint32_t want = chase_end(*sp.chain, 0, static_cast<std::uint64_t>(warm) + steps);
  std::vector<double> samples;
  const int runs = c.run.timing.warmup + c.run.timing.iters;
  for (int r = 0; r < runs; ++r) {
    CUDA_CHECK(cudaMemsetAsync(result.data(), 0xFF, sizeof(ChaseResult), c.stream));  // end 0xFFFFFFFF: no node
    if (!sp.cached) CUDA_CHECK(cudaMemsetAsync(flush.data(), r & 0xFF, flush.bytes(), c.stream));
    sp.launch(warm, steps, result.data(), c.stream);
    ChaseResult got{};
    CUDA_CHECK(cudaMemcpyAsync(&got, result.data(), sizeof(got), cudaMemcpyDeviceToHost, c.stream));
    c.stream.synchronize();
    if (got.end != want) {
      std::printf("%s: FAILED: the chase of %d loads ended at position %u, the CPU says %u%s\n", sp.space.c_str(),
                  warm + steps, got.end, want, got.end == 0xFFFFFFFFu ? " (the kernel wrote nothing)" : "");
      return false;
    }
    if (r >= c.run.timing.warmup) samples.push_back(static_cast<double>(got.cycles) / steps);
  }
  out = cml::summarize(samples);
  return true;
}

// The kernel must load with sp.sass, or its row measures another path. Unknown (no
// cuobjdump) is reported, not failed.
bool sass_as_named(const Space& sp, std::string& cell) {
  std::string why;
  const auto n = sass_count(sp.kernel, sp.sass, why);
  cell = n ? std::to_string(*n) + " " + sp.sass : "(" + why.substr(0, 40) + ")";
  if (n && *n == 0)
    std::printf("%s: FAILED: %s has no %s in its SASS: the row does not measure what it names\n", sp.space.c_str(),
                sp.kernel, sp.sass);
  return !n || *n > 0;
}

}  // namespace

bool latency_mode(Context& c) {
  const int steps = c.s.steps;
  const Sizes z = sizes(c.run.facts.l2_bytes);
  const Chain small = make_chain(kSmallNodes, 1);
  const Chain lines = make_chain(kSmallNodes, kLineWords);
  const Chain l2 = make_chain(z.l2_chain / (kLineWords * 4), kLineWords);
  const Chain dram = make_chain(z.dram_chain / (kDramStrideWords * 4), kDramStrideWords);
  std::printf("\n== Latency: one thread, %d dependent loads per chase, through each space (L2 %s) ==\n", steps,
              cml::format_bytes(c.run.facts.l2_bytes).c_str());

  cml::DeviceBuffer<std::uint32_t> d_small, d_lines, d_l2, d_dram;
  const std::uint32_t* p_small = upload_chain(d_small, small, c.stream);
  const std::uint32_t* p_lines = upload_chain(d_lines, lines, c.stream);
  const std::uint32_t* p_l2 = upload_chain(d_l2, l2, c.stream);
  const std::uint32_t* p_dram = upload_chain(d_dram, dram, c.stream);
  // cudaMemcpyToSymbol goes through the legacy default stream, which c.stream does not wait
  // for (device.cuh's copy_to_constant says why): wait for the device.
  CUDA_CHECK(cudaMemcpyToSymbol(c_chain, small.words.data(), small.bytes()));
  CUDA_CHECK(cudaDeviceSynchronize());
  const TextureObject tex(linear_texture(p_lines, lines.words.size(), cudaChannelFormatKindUnsigned));
  cml::DeviceBuffer<unsigned char> flush(z.flush);

  const auto one = [](auto kernel, auto... args) {
    return [=](int warm, int n, ChaseResult* out, cudaStream_t s) {
      kernel<<<1, 1, 0, s>>>(args..., warm, n, out);
      CUDA_CHECK_LAUNCH();
    };
  };
  const std::vector<Space> spaces = {
      {"shared memory", "__shared__ array", "chase_shared_kernel", "LDS", &small, true,
       one(chase_shared_kernel, p_small)},
      {"L1 hit", "__ldca (ld.global.ca)", "chase_ca_kernel", "LDG.E.STRONG.SM", &lines, true,
       one(chase_ca_kernel, p_lines)},
      {"read-only path hit", "__ldg", "chase_ldg_kernel", "LDG.E.CONSTANT", &lines, true,
       one(chase_ldg_kernel, p_lines)},
      {"texture hit", "tex1Dfetch, linear texture", "chase_texture_kernel", "TEX", &lines, true,
       one(chase_texture_kernel, tex.t)},
      {"constant cache hit", "__constant__, per-thread index", "chase_constant_kernel", "c[0x3][R]", &small, true,
       one(chase_constant_kernel)},
      {"local memory (L1 hit)", "per-thread array, run-time index", "chase_local_kernel", "LDL", &small, true,
       one(chase_local_kernel, p_small)},
      {"L2 hit", "__ldcg (ld.global.cg: not L1)", "chase_cg_kernel", "LDG.E.STRONG.GPU", &l2, true,
       one(chase_cg_kernel, p_l2)},
      {"device memory", "__ldcg, L2 flushed before each run", "chase_cg_kernel", "LDG.E.STRONG.GPU", &dram, false,
       one(chase_cg_kernel, p_dram)},
  };

  bool ok = true;
  std::vector<Measured> rows;
  for (const auto& sp : spaces) {
    Measured m{&sp, {}, ""};
    ok &= sass_as_named(sp, m.sass);
    if (!measure(c, sp, steps, flush, m.cycles)) {
      ok = false;
      continue;
    }
    rows.push_back(m);
  }
  std::sort(rows.begin(), rows.end(),
            [](const Measured& a, const Measured& b) { return a.cycles.median_ms < b.cycles.median_ms; });

  const int khz = peak_clock_khz(c.run.facts.index);
  cml::Table t("latency", {"space", "load", "chain", "cycles per load", "noise", "ns at peak clock", "SASS",
                           "cuobjdump -res-usage"});
  for (const auto& m : rows)
    t.row({m.space->space, m.space->load, chain_text(*m.space->chain), cml::fixed(m.cycles.median_ms, 1),
           cml::format_noise(m.cycles), khz > 0 ? cml::fixed(m.cycles.median_ms * 1e6 / khz, 1) : "-", m.sass,
           compiler_cell(m.space->kernel)});
  c.run.emit(t);
  if (khz > 0)
    std::printf(
        "(ns: cycles at the peak clock the device reports, %d MHz (cudaDevAttrClockRate); the SM may run "
        "slower, so the cycles are the measurement)\n",
        khz / 1000);
  else
    std::printf("(cudaDevAttrClockRate reports no SM clock on this device: cycles only, no ns)\n");
  std::printf(
      "(cycles per load: median of %d runs, each %d loads after a lap that warms the caches (none for "
      "device memory); the Best Practices Guide's order, slowest first: global > local > texture >> "
      "constant > shared > register)\n",
      c.run.timing.iters, steps);
  std::printf("latency: %s\n", ok ? "PASSED (every chase ended where the CPU says)" : "FAILED");
  return ok;
}

}  // namespace ch06
