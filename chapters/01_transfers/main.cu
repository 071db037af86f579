// Chapter 01 — host<->device transfers (CUDA C++ Best Practices Guide §9.1).
// Measures what the three steps of exercise.cu change: pageable vs pinned vs registered
// bandwidth over sizes, many small copies vs one batched copy, and zero-copy reads; then
// what mapped memory needs and how to use it well (program/mapped_*.cu).
//
//   ./lab run 01                          every mode in all, with your exercise.cu
//   ./lab run 01 -- --mode=batch          one part: bandwidth | batch | crossover | zerocopy | mapped-setup
//   ./lab run 01 -- --mode=mapped-access  a mode not in all (also mapped-overlap)
//   ./lab run 01 --solution               the same with the reference solution
#include "harness.hpp"
#include "program/modes.hpp"
#include "program/reference_copies.hpp"
#include "program/what_cuda_sees.hpp"
#include "transfers.cuh"

#include "cml/buffers.hpp"
#include "cml/errors.hpp"
#include "cml/exit_codes.hpp"
#include "cml/program.hpp"
#include "cml/run.hpp"
#include "cml/stream.hpp"
#include "cml/verify.hpp"

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

namespace {

using cml::Clock;
using cml::fixed;
using cml::format_bytes;
using cml::format_noise;

using ch01::Context;
using ch01::Settings;

// ---- Part 1: bandwidth over sizes --------------------------------------------------------

struct Method {
  std::string name;
  std::byte* host;                         // at least max_bytes
  const ch01::SplitCopy* split = nullptr;  // copy in pieces over several streams
};

std::vector<std::size_t> sweep_sizes(std::size_t max_bytes) {
  std::vector<std::size_t> sizes;
  for (std::size_t s = 4096; s < max_bytes; s *= 4) sizes.push_back(s);
  sizes.push_back(max_bytes);
  return sizes;
}

bool bandwidth(Context& c) {
  const std::size_t max = c.s.max_bytes;
  std::printf("\n== Bandwidth: pageable vs pinned vs registered, %s to %s ==\n", format_bytes(4096).c_str(),
              format_bytes(max).c_str());
  cml::DeviceBuffer<std::byte> device(max);
  std::unique_ptr<std::byte[]> pageable(new std::byte[max]);
  std::memset(pageable.get(), 0, max);
  ch01::LearnerPinned learner_pinned(max);
  ch01::LearnerRegistered learner_registered(max);
  cml::PinnedBuffer<std::byte> reference(max);
  cml::PinnedBuffer<std::byte> write_combined(max, cudaHostAllocWriteCombined);
  const ch01::SplitCopy four_streams(4);
  std::printf("your allocate_pinned gives %s memory; your pin_existing leaves %s memory\n",
              ch01::pointer_kind(learner_pinned.p), ch01::pointer_kind(learner_registered.data()));
  const std::vector<Method> methods = {
      {"pageable", pageable.get()},
      {"pinned (yours)", learner_pinned.p},
      {"registered (yours)", learner_registered.data()},
      {"cudaMallocHost", reference.data()},
      {"write-combined", write_combined.data()},
      {"4 streams", reference.data(), &four_streams},
  };

  bool ok = true;
  {
    const std::vector<std::byte> want = ch01::pattern(max, 1);
    for (const auto& m : methods)                  // not write-combined: host reads of it are uncached (see the docs)
      if (m.name != "write-combined" && !m.split)  // the split copy's memory is cudaMallocHost's
        ok &= cml::report(ch01::round_trip(m.host, device.data(), want, c.stream), "round trip through " + m.name);
  }

  cml::Table table("bandwidth", {"bytes", "direction", "method", "median_ms", "noise", "GB/s"});
  double best[2] = {0, 0}, yours_pinned[2] = {0, 0}, yours_registered[2] = {0, 0};
  for (const std::size_t bytes : sweep_sizes(max)) {
    for (int dir = 0; dir < 2; ++dir) {
      const bool h2d = dir == 0;
      const cudaMemcpyKind kind = h2d ? cudaMemcpyHostToDevice : cudaMemcpyDeviceToHost;
      std::vector<cml::Work> work;
      std::vector<std::string> names;
      for (const auto& m : methods) {
        if (!h2d && m.name == "write-combined") continue;  // WC is for buffers the host writes
        work.push_back([=, &device](cudaStream_t st) {
          std::byte* dst = h2d ? device.data() : m.host;
          const std::byte* src = h2d ? m.host : device.data();
          if (m.split)
            (*m.split)(dst, src, bytes, kind, st);
          else
            CUDA_CHECK(cudaMemcpyAsync(dst, src, bytes, kind, st));
        });
        names.push_back(m.name);
      }
      const auto stats = cml::time_interleaved(work, c.stream, c.run.timing, Clock::Events);
      for (std::size_t k = 0; k < stats.size(); ++k) {
        const double rate = cml::gbps(bytes, stats[k].median_ms);
        table.row({std::to_string(bytes), h2d ? "HtoD" : "DtoH", names[k], fixed(stats[k].median_ms, 4),
                   format_noise(stats[k]), fixed(rate, 2)});
        if (bytes == max) {
          if (names[k] != "pageable") best[dir] = std::max(best[dir], rate);
          if (names[k] == "pinned (yours)") yours_pinned[dir] = rate;
          if (names[k] == "registered (yours)") yours_registered[dir] = rate;
        }
      }
    }
  }
  c.run.emit(table);

  cml::Table summary("bandwidth_summary",
                     {"direction", "best GB/s", "yours pinned / best", "yours registered / best", "best / link"});
  const double link = c.run.facts.link.theoretical_gbps();
  for (int dir = 0; dir < 2; ++dir)
    summary.row({dir == 0 ? "HtoD" : "DtoH", fixed(best[dir], 2), fixed(yours_pinned[dir] / best[dir], 3),
                 fixed(yours_registered[dir] / best[dir], 3), link > 0 ? fixed(best[dir] / link, 3) : "-"});
  std::printf("\nAt %s (best of every method but pageable; link: %s):\n", format_bytes(max).c_str(),
              link > 0 ? (fixed(link, 1) + " GB/s per direction").c_str() : "unknown");
  c.run.emit(summary);

  // Write-combined memory skips the CPU's caches: the host's writes stream out through
  // write-combining buffers, but its reads are uncached. For buffers the host fills and the
  // GPU reads, never for data the host reads back.
  const std::size_t host_bytes = std::min<std::size_t>(max, 64u << 20);
  std::printf("\nThe host's own access to %s of pinned memory:\n", format_bytes(host_bytes).c_str());
  c.run.emit(ch01::host_access(reference.data(), write_combined.data(), host_bytes, c.stream, c.run.timing));
  return ok;
}

// ---- Part 2 and 3: many small copies vs one ------------------------------------------------

bool batch(Context& c) {
  std::printf("\n== Many small copies vs one: %zu pieces of %s ==\n", c.s.pieces,
              format_bytes(c.s.piece_bytes).c_str());
  ch01::PieceSet set(c.s.pieces, c.s.piece_bytes, 7);
  const ch01::CopyGraph graph(set.batch, c.stream);
  const auto& b = set.batch;
  struct Variant {
    std::string name;
    cml::Work work;
  };
  const std::vector<Variant> variants = {
      {"cudaMemcpy per piece", [&](cudaStream_t st) { ch01::send_one_by_one(b, st, true); }},
      {"cudaMemcpyAsync per piece", [&](cudaStream_t st) { ch01::send_one_by_one(b, st, false); }},
      {"cudaMemcpyBatchAsync", [&](cudaStream_t st) { ch01::send_memcpy_batch(b, st); }},
      {"graph of the copies", [&](cudaStream_t st) { graph.launch(st); }},
      {"send_batched (yours)", [&](cudaStream_t st) { ch01::send_batched(b, set.staging, st); }},
  };
  bool ok = true;
  std::vector<cml::Work> work;
  for (const auto& v : variants) {
    ok &= cml::report(set.check(v.work, c.stream), v.name);
    work.push_back(v.work);
  }

  ch01::print_send_batched_trace(set, c.stream, c.run);  // what your send_batched really issued

  const auto stats = cml::time_interleaved(work, c.stream, c.run.timing, Clock::Host);
  cml::Table table("batch", {"method", "median_ms", "noise", "us per piece", "speed-up vs cudaMemcpy", "vs async"});
  for (std::size_t k = 0; k < stats.size(); ++k)
    table.row({variants[k].name, fixed(stats[k].median_ms, 4), format_noise(stats[k]),
               fixed(stats[k].median_ms * 1e3 / c.s.pieces, 2), fixed(stats[0].median_ms / stats[k].median_ms, 2),
               fixed(stats[1].median_ms / stats[k].median_ms, 2)});
  c.run.emit(table);
  return ok;
}

bool crossover(Context& c) {
  std::printf("\n== Where batching stops paying: %zu pieces, piece size 1 KiB to 256 KiB ==\n", c.s.pieces);
  cml::Table table("crossover", {"piece bytes", "async per piece ms", "async noise", "send_batched ms", "batched noise",
                                 "batched speed-up"});
  std::size_t crossover = 0;
  bool ok = true;
  for (std::size_t piece = 1024; piece <= 256 * 1024; piece *= 2) {
    ch01::PieceSet set(c.s.pieces, piece, 11);
    const cml::Work one_by_one = [&](cudaStream_t st) { ch01::send_one_by_one(set.batch, st, false); };
    const cml::Work batched = [&](cudaStream_t st) { ch01::send_batched(set.batch, set.staging, st); };
    const auto r = set.check(batched, c.stream);
    if (!r.ok) ok &= cml::report(r, "send_batched at " + format_bytes(piece));
    const auto st = cml::time_interleaved({one_by_one, batched}, c.stream, c.run.timing, Clock::Host);
    const double speedup = st[0].median_ms / st[1].median_ms;
    if (speedup < 1.0 && crossover == 0) crossover = piece;
    table.row({std::to_string(piece), fixed(st[0].median_ms, 4), format_noise(st[0]), fixed(st[1].median_ms, 4),
               format_noise(st[1]), fixed(speedup, 2)});
  }
  c.run.emit(table);
  if (crossover)
    std::printf("batching stops paying at %s pieces: packing on the host costs more than the calls it saves\n",
                format_bytes(crossover).c_str());
  else
    std::printf("batching paid at every piece size tried\n");
  return ok;
}

// ---- Part 4: zero-copy -------------------------------------------------------------------------

bool zerocopy(Context& c) {
  const cml::DeviceFacts& facts = c.run.facts;
  std::printf("\n== Zero-copy: a kernel reads %s of host memory directly, or a copy of it ==\n",
              format_bytes(c.s.max_bytes).c_str());
  if (!facts.can_map_host_memory) {
    std::printf("SKIP: this GPU reports canMapHostMemory = 0: no zero-copy here\n");
    return true;
  }
  ch01::print_host_access(facts);
  const std::size_t n = c.s.max_bytes / sizeof(std::uint32_t);
  ch01::LearnerZeroCopy owned(n * sizeof(std::uint32_t));
  const ch01::ZeroCopy& zc = owned.z;
  std::printf("your allocate_zero_copy: host %s, device view %s\n", ch01::pointer_kind(zc.host),
              ch01::pointer_kind(zc.device));

  auto* host_words = static_cast<std::uint32_t*>(zc.host);
  ch01::fill_words(host_words, n, 3);
  cml::PinnedBuffer<std::uint32_t> pinned(n);
  std::memcpy(pinned.data(), host_words, n * sizeof(std::uint32_t));
  cml::DeviceBuffer<std::uint32_t> device(n);
  cml::DeviceBuffer<unsigned long long> sum(1);

  // Three ways a kernel may use the data: read all of it once, read all of it again and
  // again, or look up a sparse sample (one word per 4 KiB page).
  struct Access {
    std::string name;
    int reads;
    std::size_t stride;
  };
  const std::vector<Access> accesses = {
      {"every word, once", 1, 1},
      {"every word, " + std::to_string(c.s.reads) + " times", c.s.reads, 1},
      {"one word per 4 KiB, once", 1, 1024},
  };
  bool ok = true;
  cml::Table table("zerocopy", {"access", "zero-copy ms", "zero-copy noise", "copy then read ms", "copy noise",
                                "zero-copy speed-up", "faster"});
  for (const Access& a : accesses) {
    unsigned long long expect = 0;
    for (std::size_t i = 0; i < n; i += a.stride) expect += host_words[i];
    expect *= static_cast<unsigned long long>(a.reads);
    const cml::Work zero_copy = [&](cudaStream_t st) { ch01::sum_zero_copy(zc, n, a.stride, a.reads, sum.data(), st); };
    const cml::Work explicit_copy = [&](cudaStream_t st) {
      ch01::copy_then_sum(device.data(), pinned.data(), n, a.stride, a.reads, sum.data(), st);
    };
    for (const auto* w : {&zero_copy, &explicit_copy}) {
      (*w)(c.stream);
      const unsigned long long got = ch01::read_sum(sum.data(), c.stream);
      ok &= cml::report(cml::compare_exact(&got, &expect, 1),
                        std::string(w == &zero_copy ? "zero-copy" : "copy then read") + " sum, " + a.name);
    }
    const auto st = cml::time_interleaved({zero_copy, explicit_copy}, c.stream, c.run.timing, Clock::Events);
    const double speedup = st[1].median_ms / st[0].median_ms;
    table.row({a.name, fixed(st[0].median_ms, 3), format_noise(st[0]), fixed(st[1].median_ms, 3), format_noise(st[1]),
               fixed(speedup, 2), speedup >= 1.0 ? "zero-copy" : "copy"});
  }
  c.run.emit(table);
  std::printf(
      "zero-copy moves only the bytes a kernel touches, every time it touches them: it wins\n"
      "for sparse reads, roughly ties for one full pass (both cross the bus once), and loses\n"
      "when data is read again, since each pass crosses the bus instead of device memory\n");
  return ok;
}

const std::vector<cml::Mode<Context>> kModes = {
    {"bandwidth", "pageable vs pinned vs registered memory over sizes", bandwidth},
    {"batch", "many small copies vs one batched copy", batch},
    {"crossover", "the piece size where batching stops paying", crossover},
    {"zerocopy", "a kernel reading mapped host memory vs a copy", zerocopy},
    {"mapped-setup", "what this GPU and process report about mapped memory; a kernel reads cudaMallocHost memory",
     ch01::mapped_setup},
    {"mapped-access", "mapped memory read coalesced vs each lane in another 128-byte line (not in all)",
     ch01::mapped_access, false},
    {"mapped-overlap", "a kernel reading and writing mapped memory vs copy, kernel, copy on one stream (not in all)",
     ch01::mapped_overlap, false},
};

int run(int argc, char** argv) {
  Settings s;
  cml::Cli cli = cml::chapter_cli("01",
                                  "Chapter 01 - host<->device transfers: pageable vs pinned vs registered memory,\n"
                                  "many small copies vs one batched copy, zero-copy mapped memory.",
                                  kModes, s.mode);
  cli.size("size", s.max_bytes, 4096, 1ull << 40,
           "largest transfer of the sweep, and the buffer of the zero-copy and mapped modes")
      .integer("pieces", s.pieces, 1, 1 << 20, "small pieces in the batching comparison")
      .size("piece-size", s.piece_bytes, 1, 16ull << 20, "bytes per piece")
      .integer("reads", s.reads, 2, 1000, "how many passes the zero-copy comparison's repeated read makes");
  if (!cli.parse(argc, argv)) return cml::kExitOk;
  if (s.max_bytes % sizeof(std::uint32_t) != 0) throw cml::UsageError("--size: must be a multiple of 4 bytes");

  // Largest device footprint: the crossover's 256 KiB pieces, or the sweep's buffer (two of
  // them for mapped-overlap's copies: input and output).
  const std::uint64_t batch_bytes = 2 * s.pieces * std::max<std::uint64_t>(s.piece_bytes, 256 * 1024);
  const std::uint64_t data_bytes = (s.mode == "mapped-overlap" ? 2 : 1) * std::uint64_t{s.max_bytes};
  Context c{s, cml::open_run(cli, cml::Footprint{std::max(data_bytes, batch_bytes), "--size/--pieces"})};
  return cml::finish(cml::run_modes(kModes, s.mode, c));
}

}  // namespace

int main(int argc, char** argv) {
  return cml::run_program([&] { return run(argc, argv); });
}
