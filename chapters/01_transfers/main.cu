// Chapter 01 — host<->device transfers (CUDA C++ Best Practices Guide §9.1).
// Measures what the four steps of exercise.cu change: pageable vs pinned vs registered
// bandwidth over sizes, many small copies vs one batched copy, and zero-copy reads.
//
//   ./lab run 01                       everything, with your exercise.cu
//   ./lab run 01 -- --mode=batch       one part: bandwidth | batch | crossover | zerocopy
//   ./lab run 01 --solution            the same with the reference solution
#include "transfers.cuh"
#include "owners.hpp"
#include "piece_set.hpp"

#include "cml/buffers.hpp"
#include "cml/cli.hpp"
#include "cml/device.hpp"
#include "cml/errors.hpp"
#include "cml/exit_codes.hpp"
#include "cml/program.hpp"
#include "cml/stream.hpp"
#include "cml/table.hpp"
#include "cml/timing.hpp"
#include "cml/trace.hpp"
#include "cml/verify.hpp"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <memory>
#include <numeric>
#include <random>
#include <string>
#include <vector>

namespace {

using cml::Clock;
using cml::fixed;
using cml::format_bytes;

struct Settings {
  std::string mode = "all";
  std::size_t max_bytes = 256ull << 20;
  std::size_t pieces = 1024;
  std::size_t piece_bytes = 4096;
  int reads = 8;
  cml::TimingOptions timing;
  bool csv = false;
  std::string out;
};

// What CUDA says a host pointer is: pinned memory reports cudaMemoryTypeHost.
const char* pointer_kind(const void* p) {
  cudaPointerAttributes attr{};
  CUDA_CHECK(cudaPointerGetAttributes(&attr, p));
  switch (attr.type) {
    case cudaMemoryTypeHost: return "pinned";
    case cudaMemoryTypeDevice: return "device";
    case cudaMemoryTypeManaged: return "managed";
    default: return "pageable";
  }
}

// ---- Part 1: bandwidth over sizes --------------------------------------------------------

struct Method {
  std::string name;
  std::byte* host;  // at least max_bytes
};

std::vector<std::size_t> sweep_sizes(std::size_t max_bytes) {
  std::vector<std::size_t> sizes;
  for (std::size_t s = 4096; s < max_bytes; s *= 4) sizes.push_back(s);
  sizes.push_back(max_bytes);
  return sizes;
}

// Copies `bytes` in `chunks` pieces over as many streams: the "more engines" attempt.
void chunked_copy(std::byte* dst, const std::byte* src, std::size_t bytes, cudaMemcpyKind kind,
                  const std::vector<cml::Stream>& streams, cudaStream_t main, const std::vector<cml::Event>& done,
                  const cml::Event& start) {
  start.record(main);
  const std::size_t n = streams.size();
  const std::size_t chunk = (bytes + n - 1) / n;
  for (std::size_t i = 0; i < n; ++i) {
    const std::size_t off = i * chunk;
    if (off >= bytes) break;
    CUDA_CHECK(cudaStreamWaitEvent(streams[i], start, 0));
    CUDA_CHECK(cudaMemcpyAsync(dst + off, src + off, std::min(chunk, bytes - off), kind, streams[i]));
    done[i].record(streams[i]);
    CUDA_CHECK(cudaStreamWaitEvent(main, done[i], 0));
  }
}

bool run_bandwidth(const Settings& s, const cml::DeviceFacts& facts, cudaStream_t stream) {
  std::printf("\n== Bandwidth: pageable vs pinned vs registered, %s to %s ==\n",
              format_bytes(4096).c_str(), format_bytes(s.max_bytes).c_str());
  const std::size_t max = s.max_bytes;
  cml::DeviceBuffer<std::byte> device(max);
  std::unique_ptr<std::byte[]> pageable(new std::byte[max]);
  std::memset(pageable.get(), 0, max);
  ch01::LearnerPinned learner_pinned(max);
  ch01::LearnerRegistered learner_registered(max);
  cml::PinnedBuffer<std::byte> reference(max);
  cml::PinnedBuffer<std::byte> write_combined(max, cudaHostAllocWriteCombined);

  std::printf("your allocate_pinned gives %s memory; your pin_existing leaves %s memory\n",
              pointer_kind(learner_pinned.p), pointer_kind(learner_registered.data()));

  const std::vector<Method> methods = {
      {"pageable", pageable.get()},
      {"pinned (yours)", learner_pinned.p},
      {"registered (yours)", learner_registered.data()},
      {"cudaMallocHost", reference.data()},
      {"write-combined", write_combined.data()},
  };

  // Each method moves a pattern there and back once at full size: the numbers below
  // only count if the bytes arrive.
  bool ok = true;
  {
    std::vector<std::byte> want(max);
    ch01::fill_pattern(want.data(), max, 1);
    for (const auto& m : methods) {
      if (m.name == "write-combined") continue;  // host reads of WC memory are uncached: see the docs
      std::memcpy(m.host, want.data(), max);
      CUDA_CHECK(cudaMemcpyAsync(device.data(), m.host, max, cudaMemcpyHostToDevice, stream));
      CUDA_CHECK(cudaStreamSynchronize(stream));
      std::memset(m.host, 0, max);
      CUDA_CHECK(cudaMemcpyAsync(m.host, device.data(), max, cudaMemcpyDeviceToHost, stream));
      CUDA_CHECK(cudaStreamSynchronize(stream));
      ok &= cml::report(cml::compare_exact(m.host, want.data(), max), "round trip through " + m.name);
    }
  }

  std::vector<cml::Stream> streams;
  std::vector<cml::Event> done;
  for (int i = 0; i < 4; ++i) { streams.emplace_back(); done.emplace_back(cudaEventDisableTiming); }
  cml::Event chunk_start(cudaEventDisableTiming);

  cml::Table table("bandwidth", {"bytes", "direction", "method", "median_ms", "GB/s"});
  double best[2] = {0, 0}, yours_pinned[2] = {0, 0}, yours_registered[2] = {0, 0};
  for (const std::size_t bytes : sweep_sizes(max)) {
    for (int dir = 0; dir < 2; ++dir) {
      const bool h2d = dir == 0;
      const cudaMemcpyKind kind = h2d ? cudaMemcpyHostToDevice : cudaMemcpyDeviceToHost;
      std::vector<cml::Work> work;
      std::vector<std::string> names;
      for (const auto& m : methods) {
        if (!h2d && m.name == "write-combined") continue;  // WC is for buffers the host writes
        std::byte* host = m.host;
        work.push_back([=, &device](cudaStream_t st) {
          if (h2d) CUDA_CHECK(cudaMemcpyAsync(device.data(), host, bytes, kind, st));
          else CUDA_CHECK(cudaMemcpyAsync(host, device.data(), bytes, kind, st));
        });
        names.push_back(m.name);
      }
      std::byte* ref = reference.data();
      work.push_back([&, ref, bytes, h2d, kind](cudaStream_t st) {
        if (h2d) chunked_copy(device.data(), ref, bytes, kind, streams, st, done, chunk_start);
        else chunked_copy(ref, device.data(), bytes, kind, streams, st, done, chunk_start);
      });
      names.push_back("4 streams");
      const auto stats = cml::time_interleaved(work, stream, s.timing, Clock::Events);
      for (std::size_t k = 0; k < stats.size(); ++k) {
        const double rate = cml::gbps(bytes, stats[k].median_ms);
        table.row({std::to_string(bytes), h2d ? "HtoD" : "DtoH", names[k], fixed(stats[k].median_ms, 4), fixed(rate, 2)});
        if (bytes == max) {
          if (names[k] != "pageable") best[dir] = std::max(best[dir], rate);
          if (names[k] == "pinned (yours)") yours_pinned[dir] = rate;
          if (names[k] == "registered (yours)") yours_registered[dir] = rate;
        }
      }
    }
  }
  table.emit(s.csv, s.out);

  cml::Table summary("bandwidth_summary", {"direction", "best GB/s", "yours pinned / best",
                                           "yours registered / best", "best / link"});
  const double link = facts.link.theoretical_gbps();
  for (int dir = 0; dir < 2; ++dir)
    summary.row({dir == 0 ? "HtoD" : "DtoH", fixed(best[dir], 2), fixed(yours_pinned[dir] / best[dir], 3),
                 fixed(yours_registered[dir] / best[dir], 3), link > 0 ? fixed(best[dir] / link, 3) : "-"});
  std::printf("\nAt %s (best of every method but pageable; link: %s):\n", format_bytes(max).c_str(),
              link > 0 ? (fixed(link, 1) + " GB/s per direction").c_str() : "unknown");
  summary.emit(s.csv, s.out);

  // Write-combined memory skips the CPU's caches: the host's writes stream out through
  // write-combining buffers, but its reads are uncached. For buffers the host fills and the
  // GPU reads, never for data the host reads back.
  const std::size_t host_bytes = std::min<std::size_t>(max, 64u << 20);
  std::vector<std::byte> plain(host_bytes, std::byte{5});
  cml::Table wc("write_combined_host", {"memory", "host writes GB/s", "host reads GB/s"});
  for (const auto& [name, buffer] : {std::pair<const char*, std::byte*>{"cudaMallocHost", reference.data()},
                                     std::pair<const char*, std::byte*>{"write-combined", write_combined.data()}}) {
    std::byte* p = buffer;
    const auto stats = cml::time_interleaved(
        {[&, p](cudaStream_t) { std::memcpy(p, plain.data(), host_bytes); },
         [&, p](cudaStream_t) { std::memcpy(plain.data(), p, host_bytes); }},
        stream, s.timing, Clock::Host);
    wc.row({name, fixed(cml::gbps(host_bytes, stats[0].median_ms), 2), fixed(cml::gbps(host_bytes, stats[1].median_ms), 2)});
  }
  std::printf("\nThe host's own access to %s of pinned memory:\n", format_bytes(host_bytes).c_str());
  wc.emit(s.csv, s.out);
  return ok;
}

// ---- Part 2 and 3: many small copies vs one ------------------------------------------------

// A CUDA graph of the one-by-one async copies: captured once, launched as one unit.
struct CopyGraph {
  CopyGraph(const ch01::PieceBatch& batch, cudaStream_t stream) {
    CUDA_CHECK(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal));
    ch01::send_one_by_one(batch, stream, false);
    cudaGraph_t graph = nullptr;
    CUDA_CHECK(cudaStreamEndCapture(stream, &graph));
    const cudaError_t e = cudaGraphInstantiate(&exec, graph, 0);
    CUDA_CHECK(cudaGraphDestroy(graph));
    CUDA_CHECK(e);
  }
  ~CopyGraph() { cml::detail::warn_on_error(cudaGraphExecDestroy(exec), "cudaGraphExecDestroy"); }
  CopyGraph(const CopyGraph&) = delete;
  CopyGraph& operator=(const CopyGraph&) = delete;
  cudaGraphExec_t exec = nullptr;
};

bool run_batch(const Settings& s, cudaStream_t stream) {
  std::printf("\n== Many small copies vs one: %zu pieces of %s ==\n", s.pieces, format_bytes(s.piece_bytes).c_str());
  ch01::PieceSet set(s.pieces, s.piece_bytes, 7);
  CopyGraph graph(set.batch, stream);
  const auto& b = set.batch;
  struct Variant { std::string name; cml::Work work; };
  const std::vector<Variant> variants = {
      {"cudaMemcpy per piece", [&](cudaStream_t st) { ch01::send_one_by_one(b, st, true); }},
      {"cudaMemcpyAsync per piece", [&](cudaStream_t st) { ch01::send_one_by_one(b, st, false); }},
      {"cudaMemcpyBatchAsync", [&](cudaStream_t st) { ch01::send_memcpy_batch(b, st); }},
      {"graph of the copies", [&](cudaStream_t st) { CUDA_CHECK(cudaGraphLaunch(graph.exec, st)); }},
      {"send_batched (yours)", [&](cudaStream_t st) { ch01::send_batched(b, set.staging, st); }},
  };
  bool ok = true;
  std::vector<cml::Work> work;
  for (const auto& v : variants) {
    ok &= cml::report(set.check(v.work, stream), v.name);
    work.push_back(v.work);
  }

  // What your send_batched really issued, from the CUPTI trace.
  {
    cml::trace::Recorder recorder;
    ch01::send_batched(b, set.staging, stream);
    const cml::trace::Trace t = recorder.stop();
    if (t.ok)
      std::printf("your send_batched issued %zu host-to-device copies and %zu kernel(s)\n",
                  t.copies_of(cml::trace::CopyKind::HtoD).size(), t.kernels.size());
    else
      std::printf("(trace unavailable: %s)\n", t.error.c_str());
  }

  const auto stats = cml::time_interleaved(work, stream, s.timing, Clock::Host);
  cml::Table table("batch", {"method", "median_ms", "us per piece", "speed-up vs cudaMemcpy", "vs async"});
  for (std::size_t k = 0; k < stats.size(); ++k)
    table.row({variants[k].name, fixed(stats[k].median_ms, 4), fixed(stats[k].median_ms * 1e3 / s.pieces, 2),
               fixed(stats[0].median_ms / stats[k].median_ms, 2), fixed(stats[1].median_ms / stats[k].median_ms, 2)});
  table.emit(s.csv, s.out);
  return ok;
}

bool run_crossover(const Settings& s, cudaStream_t stream) {
  std::printf("\n== Where batching stops paying: %zu pieces, piece size 1 KiB to 256 KiB ==\n", s.pieces);
  cml::Table table("crossover", {"piece bytes", "async per piece ms", "send_batched ms", "batched speed-up"});
  std::size_t crossover = 0;
  bool ok = true;
  for (std::size_t piece = 1024; piece <= 256 * 1024; piece *= 2) {
    ch01::PieceSet set(s.pieces, piece, 11);
    const cml::Work one_by_one = [&](cudaStream_t st) { ch01::send_one_by_one(set.batch, st, false); };
    const cml::Work batched = [&](cudaStream_t st) { ch01::send_batched(set.batch, set.staging, st); };
    const auto r = set.check(batched, stream);
    if (!r.ok) ok &= cml::report(r, "send_batched at " + format_bytes(piece));
    const auto stats = cml::time_interleaved({one_by_one, batched}, stream, s.timing, Clock::Host);
    const double speedup = stats[0].median_ms / stats[1].median_ms;
    if (speedup < 1.0 && crossover == 0) crossover = piece;
    table.row({std::to_string(piece), fixed(stats[0].median_ms, 4), fixed(stats[1].median_ms, 4), fixed(speedup, 2)});
  }
  table.emit(s.csv, s.out);
  if (crossover)
    std::printf("batching stops paying at %s pieces: packing on the host costs more than the calls it saves\n",
                format_bytes(crossover).c_str());
  else
    std::printf("batching paid at every piece size tried\n");
  return ok;
}

// ---- Part 4: zero-copy -------------------------------------------------------------------------

bool run_zerocopy(const Settings& s, const cml::DeviceFacts& facts, cudaStream_t stream) {
  std::printf("\n== Zero-copy: a kernel reads %s of host memory directly, or a copy of it ==\n",
              format_bytes(s.max_bytes).c_str());
  if (!facts.can_map_host_memory) {
    std::printf("SKIP: this GPU reports canMapHostMemory = 0: no zero-copy here\n");
    return true;
  }
  {
    std::unique_ptr<std::byte[]> plain(new std::byte[64]);
    std::printf("pageableMemoryAccess = %d: %s\n", facts.pageable_memory_access,
                facts.pageable_memory_access
                    ? "kernels may also read plain malloc memory here (HMM/ATS), without any copy"
                    : "kernels cannot read plain malloc memory: it must be pinned and mapped");
    std::printf("a malloc pointer is %s memory to CUDA\n", pointer_kind(plain.get()));
  }
  const std::size_t n = s.max_bytes / sizeof(std::uint32_t);
  ch01::LearnerZeroCopy owned(n * sizeof(std::uint32_t));
  const ch01::ZeroCopy& zc = owned.z;
  std::printf("your allocate_zero_copy: host %s, device view %s\n", pointer_kind(zc.host), pointer_kind(zc.device));

  auto* host_words = static_cast<std::uint32_t*>(zc.host);
  std::minstd_rand rng(3);
  for (std::size_t i = 0; i < n; ++i) host_words[i] = static_cast<std::uint32_t>(rng());
  cml::PinnedBuffer<std::uint32_t> pinned(n);
  std::memcpy(pinned.data(), host_words, n * sizeof(std::uint32_t));
  cml::DeviceBuffer<std::uint32_t> device(n);
  cml::DeviceBuffer<unsigned long long> sum(1);

  // Three ways a kernel may use the data: read all of it once, read all of it again and
  // again, or look up a sparse sample (one word per 4 KiB page).
  struct Access { std::string name; int reads; std::size_t stride; };
  const std::vector<Access> accesses = {
      {"every word, once", 1, 1},
      {"every word, " + std::to_string(s.reads) + " times", s.reads, 1},
      {"one word per 4 KiB, once", 1, 1024},
  };
  bool ok = true;
  cml::Table table("zerocopy", {"access", "zero-copy ms", "copy then read ms", "zero-copy speed-up", "faster"});
  for (const Access& a : accesses) {
    unsigned long long expect = 0;
    for (std::size_t i = 0; i < n; i += a.stride) expect += host_words[i];
    expect *= static_cast<unsigned long long>(a.reads);
    const cml::Work zero_copy = [&](cudaStream_t st) {
      CUDA_CHECK(cudaMemsetAsync(sum.data(), 0, sizeof(unsigned long long), st));
      ch01::prepare_for_device(zc, st);
      for (int r = 0; r < a.reads; ++r)
        ch01::launch_sum(static_cast<const std::uint32_t*>(zc.device), n, a.stride, sum.data(), st);
    };
    const cml::Work explicit_copy = [&](cudaStream_t st) {
      CUDA_CHECK(cudaMemsetAsync(sum.data(), 0, sizeof(unsigned long long), st));
      CUDA_CHECK(cudaMemcpyAsync(device.data(), pinned.data(), n * sizeof(std::uint32_t), cudaMemcpyHostToDevice, st));
      for (int r = 0; r < a.reads; ++r) ch01::launch_sum(device.data(), n, a.stride, sum.data(), st);
    };
    for (const auto* w : {&zero_copy, &explicit_copy}) {
      (*w)(stream);
      unsigned long long got = 0;
      CUDA_CHECK(cudaMemcpyAsync(&got, sum.data(), sizeof got, cudaMemcpyDeviceToHost, stream));
      CUDA_CHECK(cudaStreamSynchronize(stream));
      ok &= cml::report(cml::compare_exact(&got, &expect, 1),
                        std::string(w == &zero_copy ? "zero-copy" : "copy then read") + " sum, " + a.name);
    }
    const auto stats = cml::time_interleaved({zero_copy, explicit_copy}, stream, s.timing, Clock::Events);
    const double speedup = stats[1].median_ms / stats[0].median_ms;
    table.row({a.name, fixed(stats[0].median_ms, 3), fixed(stats[1].median_ms, 3), fixed(speedup, 2),
               speedup >= 1.0 ? "zero-copy" : "copy"});
  }
  table.emit(s.csv, s.out);
  std::printf("zero-copy moves only the bytes a kernel touches, every time it touches them: it wins\n"
              "for sparse reads, roughly ties for one full pass (both cross the bus once), and loses\n"
              "when data is read again, since each pass crosses the bus instead of device memory\n");
  return ok;
}

int run(int argc, char** argv) {
  cml::Cli cli = cml::chapter_cli("01",
               "Chapter 01 - host<->device transfers: pageable vs pinned vs registered memory,\n"
               "many small copies vs one batched copy, zero-copy mapped memory.");
  Settings s;
  cli.choice("mode", s.mode, {"all", "bandwidth", "batch", "crossover", "zerocopy"}, "which part to run")
      .size("size", s.max_bytes, 4096, 1ull << 40, "largest transfer of the sweep, and the zero-copy buffer")
      .integer("pieces", s.pieces, 1, 1 << 20, "small pieces in the batching comparison")
      .size("piece-size", s.piece_bytes, 1, 16ull << 20, "bytes per piece")
      .integer("reads", s.reads, 2, 1000, "how many passes the zero-copy comparison's repeated read makes");
  if (!cli.parse(argc, argv)) return cml::kExitOk;
  s.timing = cml::TimingOptions{cli.warmup(), cli.iters()};
  s.csv = cli.csv();
  s.out = cli.out_dir();
  if (s.max_bytes % sizeof(std::uint32_t) != 0) throw cml::UsageError("--size: must be a multiple of 4 bytes");

  const cml::DeviceFacts facts = cml::select_device(cli.device());
  // Largest device footprint: the crossover's 256 KiB pieces, or the sweep's buffer.
  const std::uint64_t batch_bytes = 2 * s.pieces * std::max<std::uint64_t>(s.piece_bytes, 256 * 1024);
  cml::require_fits_device(std::max<std::uint64_t>(s.max_bytes, batch_bytes), facts, "--size/--pieces");
  std::printf("%s", cml::describe(facts).c_str());
  if (!s.out.empty()) cml::device_table(facts).write_csv(s.out);  // names the GPU in the plots

  cml::Stream stream;
  bool ok = true;
  const bool all = s.mode == "all";
  if (all || s.mode == "bandwidth") ok &= run_bandwidth(s, facts, stream);
  if (all || s.mode == "batch") ok &= run_batch(s, stream);
  if (all || s.mode == "crossover") ok &= run_crossover(s, stream);
  if (all || s.mode == "zerocopy") ok &= run_zerocopy(s, facts, stream);
  return cml::finish(ok);
}

}  // namespace

int main(int argc, char** argv) {
  return cml::run_program([&] { return run(argc, argv); });
}
