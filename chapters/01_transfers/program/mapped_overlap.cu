// Chapter 01 — --mode=mapped-overlap: overlap without streams. A light kernel (one multiply-add
// a word) reads its input from mapped host memory and writes its output to mapped host memory,
// against the explicit way on one stream: copy in, the same kernel on device memory, copy out.
// The rule (Best Practices Guide §9.1.3): with mapped memory the transfers happen inside the
// kernel, while it computes, and reads and writes use the link's two directions at once; on
// one stream the three steps follow each other (docs/01_transfers.md, "Mapped memory: overlap
// without streams").
#include "modes.hpp"

#include "harness.hpp"

#include "cml/buffers.hpp"
#include "cml/errors.hpp"
#include "cml/table.hpp"
#include "cml/timing.hpp"
#include "cml/verify.hpp"

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

namespace ch01 {

namespace {

// The work per word: one integer multiply-add, so the bytes, not the arithmetic, set the time.
__host__ __device__ constexpr std::uint32_t light(std::uint32_t x) { return x * 2654435761u + 12345u; }

__global__ void light_kernel(const std::uint32_t* __restrict__ in, std::uint32_t* __restrict__ out, std::size_t n) {
  const std::size_t step = static_cast<std::size_t>(gridDim.x) * blockDim.x;
  for (std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; i < n; i += step)
    out[i] = light(in[i]);  // consecutive lanes, consecutive words: coalesced both ways
}

void launch_light(const std::uint32_t* in, std::uint32_t* out, std::size_t n, int sm_count, cudaStream_t stream) {
  light_kernel<<<static_cast<unsigned>(sm_count) * 8, 256, 0, stream>>>(in, out, n);
  CUDA_CHECK_LAUNCH();
}

}  // namespace

bool mapped_overlap(Context& c) {
  if (!c.run.facts.can_map_host_memory) {
    std::printf("\nSKIP: --mode=mapped-overlap: this GPU reports canMapHostMemory = 0\n");
    return true;
  }
  const std::size_t n = c.s.max_bytes / sizeof(std::uint32_t);
  const std::size_t bytes = n * sizeof(std::uint32_t);
  std::printf("\n== Overlap without streams: %s in, one multiply-add a word, %s out ==\n",
              cml::format_bytes(bytes).c_str(), cml::format_bytes(bytes).c_str());
  const int sms = c.run.facts.sm_count;
  cml::PinnedBuffer<std::uint32_t> pinned_in(n), pinned_out(n);
  cml::DeviceBuffer<std::uint32_t> device_in(n), device_out(n);
  cml::MappedBuffer<std::uint32_t> mapped_in(n), mapped_out(n);
  fill_words(pinned_in.data(), n, 29);
  std::memcpy(mapped_in.data(), pinned_in.data(), bytes);
  std::vector<std::uint32_t> want(n);
  for (std::size_t i = 0; i < n; ++i) want[i] = light(pinned_in[i]);

  const cml::Work copy_in = [&](cudaStream_t st) {
    CUDA_CHECK(cudaMemcpyAsync(device_in.data(), pinned_in.data(), bytes, cudaMemcpyHostToDevice, st));
  };
  const cml::Work kernel = [&](cudaStream_t st) { launch_light(device_in.data(), device_out.data(), n, sms, st); };
  const cml::Work copy_out = [&](cudaStream_t st) {
    CUDA_CHECK(cudaMemcpyAsync(pinned_out.data(), device_out.data(), bytes, cudaMemcpyDeviceToHost, st));
  };
  const cml::Work explicit_copies = [&](cudaStream_t st) {
    copy_in(st);
    kernel(st);
    copy_out(st);
  };
  const cml::Work mapped = [&](cudaStream_t st) {
    launch_light(mapped_in.device_data(), mapped_out.device_data(), n, sms, st);
  };

  // Each way's output, cleared first, must be the CPU's.
  struct Way {
    const char* name;
    const cml::Work* work;
    std::uint32_t* out;
  };
  bool ok = true;
  for (const Way& w : {Way{"copy in, kernel, copy out", &explicit_copies, pinned_out.data()},
                       Way{"mapped in and out", &mapped, mapped_out.data()}}) {
    std::memset(w.out, 0, bytes);
    (*w.work)(c.stream);
    c.stream.synchronize();
    ok &= cml::report(cml::compare_exact(w.out, want.data(), n), std::string("output of ") + w.name);
  }

  const std::vector<std::string> names = {"copy in, kernel, copy out (one stream)", "mapped in and out (one kernel)",
                                          "  copy in alone", "  kernel alone (device memory)", "  copy out alone"};
  const auto st = cml::time_interleaved({explicit_copies, mapped, copy_in, kernel, copy_out}, c.stream, c.run.timing,
                                        cml::Clock::Events);
  cml::Table table("mapped_overlap", {"what", "median_ms", "noise", "time / copy, kernel, copy"});
  for (std::size_t k = 0; k < st.size(); ++k)
    table.row({names[k], cml::fixed(st[k].median_ms, 3), cml::format_noise(st[k]),
               cml::fixed(st[k].median_ms / st[0].median_ms, 2)});
  c.run.emit(table);
  const double parts = st[2].median_ms + st[3].median_ms + st[4].median_ms;
  const double slower_copy = st[2].median_ms > st[4].median_ms ? st[2].median_ms : st[4].median_ms;
  std::printf(
      "the three parts one after another: %.3f ms; the slower copy alone: %.3f ms, the least a\n"
      "kernel could take that moved both ways at once at the copies' rate\n",
      parts, slower_copy);
  return ok;
}

}  // namespace ch01
