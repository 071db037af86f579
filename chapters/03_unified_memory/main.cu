// Chapter 03 — unified memory with streams: explicit synchronisation, attaching memory to
// streams, host callbacks, prefetch and advice. Runs several host threads over their own
// managed buffers, then compares on-demand migration, prefetching and explicit copies on
// the same work, with the bytes migrated as CUPTI saw them.
//
//   ./lab run 03                           everything, with your exercise.cu
//   ./lab run 03 -- --mode=threads         the threads only (--threads=8 --rounds=6)
//   ./lab run 03 -- --mode=strategies      on-demand vs prefetch vs explicit, to the GPU
//   ./lab run 03 -- --mode=back            the way back to the CPU, and what helps
//   ./lab run 03 -- --mode=streams         per-thread default stream; what attach changes
#include "lane_owner.hpp"
#include "unified.cuh"

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
#include <chrono>
#include <cstdio>
#include <cstring>
#include <exception>
#include <memory>
#include <random>
#include <string>
#include <thread>
#include <vector>

namespace {

using cml::Clock;
using cml::fixed;
using cml::format_bytes;
using cml::trace::UnifiedKind;

struct Settings {
  std::string mode = "all";
  std::size_t bytes = 256ull << 20;
  int threads = 4, rounds = 4;
  std::size_t table_n = 1 << 20;
  cml::TimingOptions timing;
  bool csv = false;
  std::string out;
};

void explain(const cml::DeviceFacts& f) {
  std::printf("managedMemory = %d: %s\n", f.managed_memory,
              f.managed_memory ? "cudaMallocManaged works here" : "no managed memory on this device");
  std::printf("concurrentManagedAccess = %d: %s\n", f.concurrent_managed_access,
              f.concurrent_managed_access
                  ? "CPU and GPU may touch managed memory at the same time, so a host that does not wait\n"
                    "  reads stale or half-written data instead of crashing; pages migrate on demand, and\n"
                    "  attaching a buffer to a stream is not needed for correctness (--mode=streams shows\n"
                    "  what it still changes)"
                  : "while any kernel runs, the host must not touch managed memory that is not attached to\n"
                    "  an idle stream (it would crash with a segmentation fault); attach decides what it may touch");
  std::printf("pageableMemoryAccess = %d: %s\n", f.pageable_memory_access,
              f.pageable_memory_access ? "kernels may also use plain malloc memory (HMM/ATS)"
                                       : "kernels may not use plain malloc memory; managed memory is the shared kind");
}

// ---- The threads --------------------------------------------------------------------------

using ch03::LaneOwner;

bool run_threads(const Settings& s, const cml::DeviceFacts& facts, const cml::ManagedBuffer<unsigned>& table) {
  std::printf("\n== %d threads, each with its own stream and managed buffer, %d rounds ==\n", s.threads, s.rounds);
  const std::size_t total = s.bytes / sizeof(unsigned);
  std::vector<std::unique_ptr<LaneOwner>> lanes;
  for (int t = 0; t < s.threads; ++t) {
    const std::size_t first = total * t / s.threads, last = total * (t + 1) / s.threads;
    lanes.push_back(std::make_unique<LaneOwner>(last - first, table, facts.index, 100 + t));
  }
  CUDA_CHECK(cudaDeviceSynchronize());
  std::vector<std::exception_ptr> errors(lanes.size());
  const auto t0 = std::chrono::steady_clock::now();
  {
    std::vector<std::thread> threads;
    for (std::size_t t = 0; t < lanes.size(); ++t)
      threads.emplace_back([&, t] {
        try {
          CUDA_CHECK(cudaSetDevice(facts.index));
          ch03::run_lane(lanes[t]->lane, s.rounds, lanes[t]->signal);
        } catch (...) {
          errors[t] = std::current_exception();
        }
      });
    for (auto& th : threads) th.join();
  }
  const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  for (const auto& e : errors)
    if (e) std::rethrow_exception(e);
  CUDA_CHECK(cudaDeviceSynchronize());

  bool ok = true;
  cml::Table table_out("threads", {"thread", "words", "callbacks", "result"});
  for (std::size_t t = 0; t < lanes.size(); ++t) {
    const std::vector<unsigned> want = lanes[t]->after_rounds(s.rounds);
    const auto r = cml::compare_exact(lanes[t]->data.data(), want.data(), want.size());
    ok &= r.ok;
    table_out.row({std::to_string(t), std::to_string(want.size()), std::to_string(lanes[t]->signal.done()), r.describe()});
  }
  table_out.emit(s.csv, s.out);
  std::printf("all threads: %s in %.2f ms\n", ok ? "PASSED" : "FAILED", ms);
  if (!ok)
    std::printf("a wrong result here usually means the host used a buffer before its kernel finished (step 1)\n");
  return ok;
}

// ---- What moves, and how fast -------------------------------------------------------------

struct Migration {
  bool ok = false;
  std::string error;
  std::uint64_t htod = 0, dtoh = 0, htod_user = 0, dtoh_user = 0, gpu_faults = 0, cpu_faults = 0;
};

// Unified-memory records can arrive after the work that caused them has finished, so
// each variant is not traced alone: one recording covers them all, and each record counts
// for the variant whose time window [start, end] holds its start.
struct Window {
  std::uint64_t start = 0, end = 0;
};

std::vector<Migration> traced_migrations(const std::vector<cml::Work>& prepare, const std::vector<cml::Work>& work,
                                         cudaStream_t stream) {
  cml::trace::Options opts;
  opts.unified_memory = true;
  cml::trace::Recorder recorder(opts);
  std::vector<Window> windows;
  for (std::size_t k = 0; k < work.size(); ++k) {
    if (prepare[k]) prepare[k](stream);
    CUDA_CHECK(cudaDeviceSynchronize());
    Window w;
    w.start = cml::trace::timestamp_ns();
    work[k](stream);
    CUDA_CHECK(cudaDeviceSynchronize());
    w.end = cml::trace::timestamp_ns();
    windows.push_back(w);
  }
  const auto t = recorder.stop();
  std::vector<Migration> out(work.size());
  for (auto& m : out) {
    m.ok = t.ok;
    m.error = t.error;
  }
  for (const auto& u : t.unified) {
    for (std::size_t k = 0; k < windows.size(); ++k) {
      if (u.when.start < windows[k].start || u.when.start > windows[k].end) continue;
      Migration& m = out[k];
      const bool user = u.migration_cause == 1;  // CUPTI_ACTIVITY_UNIFIED_MEMORY_MIGRATION_CAUSE_USER
      if (u.kind == UnifiedKind::BytesHtoD) { m.htod += u.value; if (user) m.htod_user += u.value; }
      if (u.kind == UnifiedKind::BytesDtoH) { m.dtoh += u.value; if (user) m.dtoh_user += u.value; }
      if (u.kind == UnifiedKind::GpuPageFault) m.gpu_faults += u.value;
      if (u.kind == UnifiedKind::CpuPageFault) m.cpu_faults += u.value;
    }
  }
  return out;
}

std::string mib(std::uint64_t b) { return fixed(static_cast<double>(b) / (1 << 20), 1); }

// A way of moving the data: what to do first (untimed) and what to time.
struct Variant {
  std::string name;
  cml::Work prepare, work;
};

// Times the variants interleaved, then traces each once for the bytes that migrated, and
// tabulates both: `to_gpu` chooses the direction reported.
cml::Table measure_variants(const std::string& table_name, const std::vector<Variant>& variants, bool to_gpu,
                            std::size_t bytes, cudaStream_t stream, const Settings& s, Clock clock,
                            std::vector<cml::Stats>* stats_out, std::vector<Migration>* moved_out) {
  std::vector<cml::Work> prepare, work;
  for (const auto& v : variants) {
    prepare.push_back(v.prepare);
    work.push_back(v.work);
  }
  const auto stats = cml::time_interleaved(prepare, work, stream, s.timing, clock);
  const auto moved = traced_migrations(prepare, work, stream);
  cml::Table t(table_name, {to_gpu ? "strategy" : "way", "ms", "GB/s", to_gpu ? "MiB to GPU" : "MiB to CPU",
                            "of which prefetched", to_gpu ? "GPU page faults" : "CPU page faults"});
  for (std::size_t k = 0; k < variants.size(); ++k) {
    const Migration& m = moved[k];
    t.row({variants[k].name, fixed(stats[k].median_ms, 3), fixed(cml::gbps(bytes, stats[k].median_ms), 1),
           m.ok ? mib(to_gpu ? m.htod : m.dtoh) : "-", m.ok ? mib(to_gpu ? m.htod_user : m.dtoh_user) : "-",
           m.ok ? std::to_string(to_gpu ? m.gpu_faults : m.cpu_faults) : m.error});
  }
  if (stats_out) *stats_out = stats;
  if (moved_out) *moved_out = moved;
  return t;
}


cudaMemLocation host_location() {
  cudaMemLocation l{};
  l.type = cudaMemLocationTypeHost;
  return l;
}
cudaMemLocation device_location(int device) {
  cudaMemLocation l{};
  l.type = cudaMemLocationTypeDevice;
  l.id = device;
  return l;
}

bool run_strategies(const Settings& s, const cml::DeviceFacts& facts, const cml::ManagedBuffer<unsigned>& table) {
  const std::size_t n = s.bytes / sizeof(unsigned);
  std::printf("\n== To the GPU: %s first touched on the CPU, then one kernel over it ==\n", format_bytes(s.bytes).c_str());
  LaneOwner owner(n, table, facts.index, 7);
  const ch03::Lane& lane = owner.lane;
  ch03::advise(lane);
  cml::PinnedBuffer<unsigned> pinned(n);
  std::memcpy(pinned.data(), owner.initial.data(), s.bytes);
  cml::DeviceBuffer<unsigned> device(n);
  ch03::Lane device_lane = lane;
  device_lane.data = device.data();

  // Before each run the host writes the whole buffer, as a host step would: its pages are
  // then on the CPU, and the way to the GPU starts from there.
  const cml::Work to_cpu = [&](cudaStream_t) { std::memcpy(lane.data, owner.initial.data(), s.bytes); };
  const cml::Work on_gpu = [&](cudaStream_t st) {
    CUDA_CHECK(cudaMemPrefetchAsync(lane.data, s.bytes, device_location(facts.index), 0, st));
  };
  const std::vector<Variant> strategies = {
      {"on demand: the kernel faults pages in", to_cpu, [&](cudaStream_t) { ch03::launch_gpu_step(lane, 0); }},
      {"prefetch (yours), then the kernel", to_cpu,
       [&](cudaStream_t) { ch03::prefetch_to_gpu(lane); ch03::launch_gpu_step(lane, 0); }},
      {"cudaMemcpyAsync from pinned, then the kernel", {},
       [&](cudaStream_t st) {
         CUDA_CHECK(cudaMemcpyAsync(device.data(), pinned.data(), s.bytes, cudaMemcpyHostToDevice, st));
         ch03::launch_gpu_step(device_lane, 0);
       }},
      {"the kernel alone, data already on the GPU", on_gpu, [&](cudaStream_t) { ch03::launch_gpu_step(lane, 0); }},
      {"prefetch (yours) alone", to_cpu, [&](cudaStream_t) { ch03::prefetch_to_gpu(lane); }},
      {"cudaMemcpyAsync from pinned alone", {},
       [&](cudaStream_t st) {
         CUDA_CHECK(cudaMemcpyAsync(device.data(), pinned.data(), s.bytes, cudaMemcpyHostToDevice, st));
       }},
  };
  std::vector<cml::Stats> stats;
  std::vector<Migration> migrations;
  const cml::Table t = measure_variants("strategies", strategies, true, s.bytes, lane.stream, s, Clock::Events,
                                        &stats, &migrations);
  t.emit(s.csv, s.out);
  if (migrations[1].ok && migrations[1].htod < s.bytes / 2)
    std::printf("note: CUPTI reported fewer migrated bytes than the buffer holds (see docs/03_unified_memory.md)\n");
  const std::size_t alone = strategies.size() - 2;
  std::printf("(GB/s counts the buffer's bytes over the whole time, kernel included)\n"
              "to the GPU alone: prefetch reaches %.2f of an explicit copy from pinned memory\n",
              stats[alone + 1].median_ms / stats[alone].median_ms);
  return true;
}

bool run_way_back(const Settings& s, const cml::DeviceFacts& facts, const cml::ManagedBuffer<unsigned>& table) {
  const std::size_t n = s.bytes / sizeof(unsigned);
  std::printf("\n== Back to the CPU: %s resident on the GPU, needed by the host ==\n", format_bytes(s.bytes).c_str());
  LaneOwner owner(n, table, facts.index, 9);
  const ch03::Lane& lane = owner.lane;
  cml::PinnedBuffer<unsigned> pinned(n);
  cml::DeviceBuffer<unsigned> device(n);
  std::vector<cml::Stream> pieces(4);
  const cml::Work on_gpu = [&](cudaStream_t st) {
    CUDA_CHECK(cudaMemPrefetchAsync(lane.data, s.bytes, device_location(facts.index), 0, st));
  };
  // The host reads one word per 4 KiB page: each first touch faults a page (and its
  // neighbours, as the driver decides) over to the CPU.
  volatile unsigned sink = 0;
  const cml::Work touch = [&](cudaStream_t) {
    unsigned acc = 0;
    for (std::size_t i = 0; i < n; i += 1024) acc += lane.data[i];
    sink = acc;
  };
  const std::vector<Variant> ways = {
      {"prefetch to the CPU (yours)", on_gpu, [&](cudaStream_t) { ch03::prefetch_to_cpu(lane); }},
      {"host touches each page (on demand)", on_gpu, touch},
      {"prefetch in 4 pieces on 4 streams", on_gpu,
       [&](cudaStream_t) {
         const std::size_t piece = (s.bytes / 4 + 4095) / 4096 * 4096;
         for (std::size_t i = 0; i < 4; ++i) {
           const std::size_t off = std::min(s.bytes, i * piece), len = std::min(piece, s.bytes - off);
           if (len > 0)
             CUDA_CHECK(cudaMemPrefetchAsync(reinterpret_cast<char*>(lane.data) + off, len, host_location(), 0, pieces[i]));
         }
       }},
      {"cudaMemcpyAsync managed -> pinned", on_gpu,
       [&](cudaStream_t st) { CUDA_CHECK(cudaMemcpyAsync(pinned.data(), lane.data, s.bytes, cudaMemcpyDefault, st)); }},
      {"cudaMemcpyAsync device -> pinned", {},
       [&](cudaStream_t st) { CUDA_CHECK(cudaMemcpyAsync(pinned.data(), device.data(), s.bytes, cudaMemcpyDeviceToHost, st)); }},
  };
  const cml::Table t = measure_variants("way_back", ways, false, s.bytes, lane.stream, s, Clock::Host, nullptr, nullptr);
  t.emit(s.csv, s.out);
  // The data must have survived the trips.
  on_gpu(lane.stream);
  ch03::prefetch_to_cpu(lane);
  CUDA_CHECK(cudaDeviceSynchronize());
  return cml::report(cml::compare_exact(lane.data, owner.initial.data(), n), "data after the round trips");
}

// ---- Streams and threads: the per-thread default stream, and what attach changes ---------

// Runs fn(t) on `threads` host threads at once and returns the wall time in ms.
double on_threads(int threads, int device, const std::function<void(int)>& fn) {
  std::vector<std::exception_ptr> errors(static_cast<std::size_t>(threads));
  const auto t0 = std::chrono::steady_clock::now();
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t)
    pool.emplace_back([&, t] {
      try {
        CUDA_CHECK(cudaSetDevice(device));
        fn(t);
      } catch (...) {
        errors[static_cast<std::size_t>(t)] = std::current_exception();
      }
    });
  for (auto& th : pool) th.join();
  for (const auto& e : errors)
    if (e) std::rethrow_exception(e);
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

bool run_streams(const Settings& s, const cml::DeviceFacts& facts, const cml::ManagedBuffer<unsigned>& table) {
  std::printf("\n== %d threads: the default stream, and attaching buffers ==\n", s.threads);
  const std::size_t n = std::max<std::size_t>(1024, s.bytes / sizeof(unsigned) / s.threads);
  std::vector<std::unique_ptr<LaneOwner>> lanes;
  for (int t = 0; t < s.threads; ++t) lanes.push_back(std::make_unique<LaneOwner>(n, table, facts.index, 300 + t));
  CUDA_CHECK(cudaDeviceSynchronize());

  // Each thread launches a kernel that takes 5 ms on "the default stream". Compiled
  // normally, that is the one legacy stream of the device: the threads' kernels take turns.
  // With nvcc --default-stream per-thread (or cudaStreamPerThread, which this uses) each
  // thread has its own default stream and the kernels run together.
  cml::Table t("streams", {"experiment", "ms", "note"});
  const double delay_ms = 5.0;
  for (const auto& [name, stream] : {std::pair<const char*, cudaStream_t>{"legacy default stream", cudaStreamLegacy},
                                     std::pair<const char*, cudaStream_t>{"per-thread default stream", cudaStreamPerThread}}) {
    const double ms = on_threads(s.threads, facts.index, [&, stream = stream](int th) {
      ch03::Lane lane = lanes[static_cast<std::size_t>(th)]->lane;
      lane.stream = stream;
      lane.n = 2048;  // 8 blocks: small enough that several such kernels fit on the GPU at once
      ch03::launch_slow_gpu_step(lane, 0, delay_ms);
      CUDA_CHECK(cudaStreamSynchronize(stream));
    });
    t.row({std::string(name) + ": each thread one 5 ms kernel", fixed(ms, 2),
           ms > 1.5 * s.threads * delay_ms / 2 ? "the threads' kernels took turns" : "the threads' kernels ran together"});
  }

  // The same rounds (kernel on the thread's stream, wait, host step) with every buffer
  // attached to all streams, then each to its own stream alone; alternated three times and
  // the medians kept, so that neither gains from going second.
  std::vector<double> times[2];
  for (int rep = 0; rep < 3; ++rep) {
    for (int k = 0; k < 2; ++k) {
      const unsigned flags = k == 0 ? cudaMemAttachGlobal : cudaMemAttachSingle;
      for (auto& l : lanes) CUDA_CHECK(cudaStreamAttachMemAsync(l->lane.stream, l->lane.data, 0, flags));
      CUDA_CHECK(cudaDeviceSynchronize());
      times[k].push_back(on_threads(s.threads, facts.index, [&](int th) {
        const ch03::Lane& lane = lanes[static_cast<std::size_t>(th)]->lane;
        for (int r = 0; r < s.rounds; ++r) {
          ch03::launch_gpu_step(lane, r);
          CUDA_CHECK(cudaStreamSynchronize(lane.stream));
          ch03::host_step(lane, r);
        }
      }));
    }
  }
  for (int k = 0; k < 2; ++k)
    t.row({std::string(k == 0 ? "cudaMemAttachGlobal" : "cudaMemAttachSingle") + ": " + std::to_string(s.rounds) +
               " rounds per thread, on demand",
           fixed(cml::summarize(times[k]).median_ms, 2),
           facts.concurrent_managed_access ? "median of 3, alternated; concurrentManagedAccess = 1" : "median of 3, alternated"});
  t.emit(s.csv, s.out);
  return true;
}

int run(int argc, char** argv) {
  cml::Cli cli = cml::chapter_cli("03",
               "Chapter 03 - unified memory with streams: synchronisation, attaching buffers to streams,\n"
               "host callbacks, prefetch and advice; on-demand vs prefetched vs explicit copies.");
  Settings s;
  cli.choice("mode", s.mode, {"all", "threads", "strategies", "back", "streams"}, "which part to run")
      .size("size", s.bytes, 4096, 1ull << 40, "managed bytes in all (never more than the GPU has free)")
      .integer("threads", s.threads, 1, 64, "host threads, each with its own stream and buffer")
      .integer("rounds", s.rounds, 1, 1000, "kernel -> host rounds per thread")
      .integer("table", s.table_n, 1, 1 << 28, "words in the shared read-only table");
  if (!cli.parse(argc, argv)) return cml::kExitOk;
  s.timing = cml::TimingOptions{cli.warmup(), cli.iters()};
  s.csv = cli.csv();
  s.out = cli.out_dir();
  s.bytes = s.bytes / 4096 * 4096;  // whole pages, so prefetches and the table's modulo line up
  if (s.bytes < static_cast<std::size_t>(s.threads) * 4096)
    throw cml::UsageError("--size: at least one 4 KiB page per thread");

  const cml::DeviceFacts facts = cml::select_device(cli.device());
  cml::require_feature(facts.managed_memory, "this device has no managed memory (managedMemory = 0)");
  // Managed memory beyond what the GPU has free can hang it: refuse instead.
  const std::uint64_t managed = s.bytes + s.table_n * sizeof(unsigned);
  cml::require_fits_device(managed + (s.mode == "threads" ? 0 : s.bytes), facts, "--size (managed + device buffers)");
  std::printf("%s", cml::describe(facts).c_str());
  explain(facts);
  if (!s.out.empty()) cml::device_table(facts).write_csv(s.out);

  cml::ManagedBuffer<unsigned> table(s.table_n);
  ch03::fill_random(table.data(), table.size(), 1);
  bool ok = true;
  const bool all = s.mode == "all";
  if (all || s.mode == "threads") ok &= run_threads(s, facts, table);
  if (all || s.mode == "strategies") ok &= run_strategies(s, facts, table);
  if (all || s.mode == "back") ok &= run_way_back(s, facts, table);
  if (all || s.mode == "streams") ok &= run_streams(s, facts, table);
  return cml::finish(ok);
}

}  // namespace

int main(int argc, char** argv) {
  return cml::run_program([&] { return run(argc, argv); });
}
