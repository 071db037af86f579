// Chapter 09 — --mode=roofline: this GPU's ceilings, measured (the FP32 FMA peak with
// fma_peak_kernel, the DRAM bandwidth with a device-to-device copy, the L2's and shared
// memory's with 16-byte reads: l2_read, shared_read), then every kernel at the
// timed shape placed on them: its GFLOP/s against its compulsory arithmetic intensity
// (roofline.csv; the ceilings in ceilings.csv; plot.py draws both). See modes.hpp.
#include "modes.hpp"

#include "cml/buffers.hpp"
#include "cml/table.hpp"
#include "cml/timing.hpp"

#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>

namespace ch09 {

namespace {

using cml::fixed;

struct Ceilings {
  double peak_gflops = 0;  // FP32 FMA
  double dram_gbps = 0;    // device-to-device copy: bytes read + written per second
  double l2_gbps = 0;      // 16-byte reads of a buffer the L2 holds
  double shared_gbps = 0;  // conflict-free 16-byte shared loads, every SM
  int fma_blocks = 0;
  std::size_t l2_buffer = 0;
};

// The FMA kernel and the copy, timed interleaved; their buffers are freed before the
// matrices are made.
Ceilings measure_ceilings(Context& c) {
  Ceilings out;
  out.fma_blocks = kFmaBlocksPerSm * c.run.facts.sm_count;
  const std::size_t words = kCopyBytes / sizeof(float);
  cml::DeviceBuffer<float> sink(static_cast<std::size_t>(out.fma_blocks) * kFmaThreads), in(words), copy(words);
  cml::fill_bytes(in.data(), 0, kCopyBytes);
  double fma_flops = 0;
  const int read_blocks = kReadBlocksPerSm * c.run.facts.sm_count;
  out.l2_buffer = std::max<std::size_t>(c.run.facts.l2_bytes / 4, 1u << 20) / 16 * 16;
  cml::DeviceBuffer<float> l2_in(out.l2_buffer / sizeof(float)),
      read_sink(static_cast<std::size_t>(read_blocks) * kReadThreads);
  cml::fill_bytes(l2_in.data(), 0, out.l2_buffer);
  double l2_bytes = 0, shared_bytes = 0;
  const std::vector<cml::Work> work = {
      [&](cudaStream_t s) { fma_flops = fma_peak(sink.data(), out.fma_blocks, kFmaIterations, s); },
      [&](cudaStream_t s) { device_copy(in.data(), copy.data(), words, s); },
      [&](cudaStream_t s) {
        l2_bytes = l2_read(l2_in.data(), l2_in.size(), kL2Passes, read_sink.data(), read_blocks, s);
      },
      [&](cudaStream_t s) { shared_bytes = shared_read(read_blocks, kSharedIterations, read_sink.data(), s); },
  };
  const auto st = cml::time_interleaved(work, c.stream, c.run.timing);
  out.peak_gflops = fma_flops / (st[0].median_ms * 1e6);
  out.dram_gbps = cml::gbps(2 * kCopyBytes, st[1].median_ms);
  out.l2_gbps = l2_bytes / (st[2].median_ms * 1e6);
  out.shared_gbps = shared_bytes / (st[3].median_ms * 1e6);
  std::printf("FP32 FMA peak: %s GFLOP/s (fma_peak_kernel, %s); DRAM: %s GB/s (a %s copy, read + written, %s)\n",
              fixed(out.peak_gflops, 0).c_str(), cml::with_noise(st[0]).c_str(), fixed(out.dram_gbps, 0).c_str(),
              cml::format_bytes(kCopyBytes).c_str(), cml::with_noise(st[1]).c_str());
  std::printf("L2: %s GB/s (16-byte reads of a %s buffer, %s); shared memory: %s GB/s (every SM, %s)\n",
              fixed(out.l2_gbps, 0).c_str(), cml::format_bytes(out.l2_buffer).c_str(), cml::with_noise(st[2]).c_str(),
              fixed(out.shared_gbps, 0).c_str(), cml::with_noise(st[3]).c_str());
  return out;
}

}  // namespace

bool roofline_mode(Context& c) {
  std::printf(
      "\n== The roofline of this GPU: FP32 FMA peak and DRAM bandwidth, measured, and every kernel on them "
      "==\n");
  const Ceilings ceil = measure_ceilings(c);
  const double ridge = ceil.peak_gflops / ceil.dram_gbps;

  cml::Table ct("ceilings", {"ceiling", "measured", "unit", "how"});
  ct.row({"FP32 FMA peak", fixed(ceil.peak_gflops, 0), "GFLOP/s",
          "fma_peak_kernel: " + std::to_string(ceil.fma_blocks) + " blocks of " + std::to_string(kFmaThreads) +
              " threads, " + std::to_string(kFmaChains) + " independent FFMA chains each"});
  ct.row({"DRAM bandwidth", fixed(ceil.dram_gbps, 0), "GB/s",
          "cudaMemcpyAsync device to device of " + cml::format_bytes(kCopyBytes) + ", bytes read + written"});
  ct.row({"L2 bandwidth", fixed(ceil.l2_gbps, 0), "GB/s",
          "l2_read: 16-byte loads through L2 (ld.global.cg) of a " + cml::format_bytes(ceil.l2_buffer) +
              " buffer the L2 holds, " + std::to_string(kL2Passes) + " passes"});
  ct.row({"shared-memory bandwidth", fixed(ceil.shared_gbps, 0), "GB/s",
          "shared_read: conflict-free LDS.128 on every SM (" + std::to_string(kReadBlocksPerSm) + " blocks of " +
              std::to_string(kReadThreads) + " a SM)"});
  ct.row({"ridge point", fixed(ridge, 1), "FLOP/byte", "FMA peak over DRAM bandwidth: below it, memory-bound"});
  ct.row({"L2 ridge point", fixed(ceil.peak_gflops / ceil.l2_gbps, 1), "FLOP/byte",
          "FMA peak over L2 bandwidth: a kernel that moves more L2 bytes per FLOP than this is L2-bound"});
  ct.row({"shared ridge point", fixed(ceil.peak_gflops / ceil.shared_gbps, 1), "FLOP/byte",
          "FMA peak over shared-memory bandwidth: a kernel that loads more shared bytes per FLOP is bound there"});
  if (c.run.facts.dram_peak_gbps() > 0)
    ct.row({"DRAM theoretical", fixed(c.run.facts.dram_peak_gbps(), 0), "GB/s",
            "2 x memory clock x bus width (device attributes): not measured"});
  c.run.emit(ct);

  bool ok = true;
  const auto rows = measure(c, c.shape, ok);
  const double ai = intensity(c.shape);
  const double roof = std::min(ceil.peak_gflops, ai * ceil.dram_gbps);
  cml::Table t("roofline",
               {"kernel", "step", "GFLOP/s", "FLOP/byte", "of FMA peak", "roof here", "of cuBLAS", "result"});
  for (const Timed& r : rows) {
    const double g = r.timed() ? gflops(c.shape, r.stats.median_ms) : 0.0;
    t.row({r.name, r.step < 0 ? "-" : std::to_string(r.step), r.timed() ? fixed(g, 0) : "-", fixed(ai, 1),
           r.timed() ? fixed(g / ceil.peak_gflops, 3) : "-", fixed(roof, 0), of_cublas(r, rows), r.status});
  }
  c.run.emit(t);
  std::printf(
      "(%s: %s FLOP/byte, %s the ridge point of %s: the roof there is %s. FLOP/byte counts the compulsory "
      "traffic only (A and B read once, C written once): a kernel that reads its tiles from DRAM again and "
      "again has a lower real intensity than its point shows)\n",
      describe(c.shape).c_str(), fixed(ai, 1).c_str(), ai >= ridge ? "above" : "below", fixed(ridge, 1).c_str(),
      ai >= ridge ? "the FMA peak" : "the DRAM line");
  return ok;
}

}  // namespace ch09
