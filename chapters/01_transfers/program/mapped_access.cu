// Chapter 01 — --mode=mapped-access: a kernel sums mapped host memory twice, reading the same
// words in two orders: coalesced (the 32 lanes of a warp take 32 consecutive words, one
// 128-byte line) and across lines (each lane a word of a different 128-byte line). The rule
// (Best Practices Guide §9.1.3): loads and stores of mapped memory should be coalesced, since
// every request crosses the link to host memory (docs/01_transfers.md, "Mapped memory:
// coalesced or not").
#include "modes.hpp"

#include "harness.hpp"

#include "cml/buffers.hpp"
#include "cml/errors.hpp"
#include "cml/table.hpp"
#include "cml/timing.hpp"
#include "cml/verify.hpp"

#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

namespace ch01 {

namespace {

constexpr std::size_t kTileWords = 32 * 32;  // 32 lines of 32 words: 4 KiB

enum class Order { Coalesced, AcrossLines };

// Each thread adds a grid-stride share; the i-th word read is word i (coalesced), or, within
// each tile of 32 x 32 words, the tile transposed: lane l of the tile's r-th warp-row takes
// word 32 l + r, so a warp's 32 loads fall in 32 lines. Every word is read once either way.
// n is a multiple of kTileWords, so the lanes of a warp all run the same trips.
template <Order kOrder>
__global__ void sum_in_order_kernel(const std::uint32_t* __restrict__ words, std::size_t n, unsigned long long* sum) {
  unsigned long long local = 0;
  const std::size_t step = static_cast<std::size_t>(gridDim.x) * blockDim.x;
  for (std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; i < n; i += step) {
    std::size_t w = i;
    if constexpr (kOrder == Order::AcrossLines) w = (i & ~(kTileWords - 1)) | ((i & 31) << 5) | ((i >> 5) & 31);
    local += words[w];
  }
  for (int offset = 16; offset > 0; offset /= 2) local += __shfl_down_sync(0xffffffffu, local, offset);
  if ((threadIdx.x & 31) == 0) atomicAdd(sum, local);
}

// Enqueues on `stream`: clear *sum, then one pass of the kernel of `order` over n words.
void sum_in_order(Order order, const std::uint32_t* words, std::size_t n, int sm_count, unsigned long long* sum,
                  cudaStream_t stream) {
  CUDA_CHECK(cudaMemsetAsync(sum, 0, sizeof(unsigned long long), stream));
  const unsigned blocks = static_cast<unsigned>(sm_count) * 8;  // as launch_sum: many loads in flight
  if (order == Order::Coalesced)
    sum_in_order_kernel<Order::Coalesced><<<blocks, 256, 0, stream>>>(words, n, sum);
  else
    sum_in_order_kernel<Order::AcrossLines><<<blocks, 256, 0, stream>>>(words, n, sum);
  CUDA_CHECK_LAUNCH();
}

}  // namespace

bool mapped_access(Context& c) {
  if (!c.run.facts.can_map_host_memory) {
    std::printf("\nSKIP: --mode=mapped-access: this GPU reports canMapHostMemory = 0\n");
    return true;
  }
  const std::size_t n = c.s.max_bytes / (kTileWords * sizeof(std::uint32_t)) * kTileWords;  // whole tiles
  const std::size_t bytes = n * sizeof(std::uint32_t);
  std::printf("\n== Mapped memory read coalesced or across lines: a kernel sums %s of it ==\n",
              cml::format_bytes(bytes).c_str());
  cml::MappedBuffer<std::uint32_t> host(n);
  const unsigned long long expect = fill_words(host.data(), n, 23);
  cml::DeviceBuffer<unsigned long long> sum(1);
  const int sms = c.run.facts.sm_count;

  struct Variant {
    const char* name;
    Order order;
  };
  const std::vector<Variant> variants = {
      {"coalesced: a warp reads one 128-byte line", Order::Coalesced},
      {"across lines: each lane a different line", Order::AcrossLines},
  };
  bool ok = true;
  std::vector<cml::Work> work;
  for (const Variant& v : variants) {
    work.push_back([&, v](cudaStream_t st) { sum_in_order(v.order, host.device_data(), n, sms, sum.data(), st); });
    work.back()(c.stream);
    const unsigned long long got = read_sum(sum.data(), c.stream);
    ok &= cml::report(cml::compare_exact(&got, &expect, 1), std::string("sum of mapped memory, ") + v.name);
  }
  const auto st = cml::time_interleaved(work, c.stream, c.run.timing, cml::Clock::Events);
  cml::Table table("mapped_access", {"order", "median_ms", "noise", "GB/s", "time / coalesced"});
  for (std::size_t k = 0; k < st.size(); ++k)
    table.row({variants[k].name, cml::fixed(st[k].median_ms, 3), cml::format_noise(st[k]),
               cml::fixed(cml::gbps(bytes, st[k].median_ms), 2), cml::fixed(st[k].median_ms / st[0].median_ms, 2)});
  c.run.emit(table);
  std::printf(
      "GB/s: the bytes summed over the time; both orders sum every word once, so the difference\n"
      "is only in how the loads of a warp fall into 128-byte lines\n");
  return ok;
}

}  // namespace ch01
