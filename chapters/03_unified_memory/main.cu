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
//   ./lab run 03 -- --mode=sync-rules      which calls count as synchronisation, checked
//   ./lab run 03 -- --mode=unchecked       what CUDA does not check: races, __managed__, attach
#include "harness.hpp"
#include "program/sync_rules.hpp"
#include "program/unchecked.hpp"
#include "unified_memory.cuh"

#include "cml/api_trace.hpp"
#include "cml/errors.hpp"
#include "cml/exit_codes.hpp"
#include "cml/program.hpp"
#include "cml/run.hpp"
#include "cml/trace.hpp"
#include "cml/verify.hpp"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace {

using ch03::LaneOwner;
using cml::fixed;
using cml::format_bytes;

struct Settings {
  std::string mode = "all";
  std::size_t bytes = 256ull << 20;
  int threads = 4, rounds = 4;
  std::size_t table_n = 1 << 20;
};

// What every mode works with: the settings, the run, and the table all lanes read.
struct Context {
  const Settings& s;
  const cml::Run& run;
  const cml::ManagedBuffer<unsigned>& table;
  int device() const { return run.facts.index; }
};

void explain(const cml::DeviceFacts& f) {
  std::printf("managedMemory = %d: %s\n", f.managed_memory,
              f.managed_memory ? "cudaMallocManaged works here" : "no managed memory on this device");
  std::printf("concurrentManagedAccess = %d: %s\n", f.concurrent_managed_access,
              f.concurrent_managed_access
                  ? "CPU and GPU may touch managed memory at the same time, so a host that does not wait\n"
                    "  races with the kernel (it may see old, new or mixed data) instead of crashing;\n"
                    "  pages migrate on demand, and\n"
                    "  attaching a buffer to a stream is not needed for correctness (--mode=streams shows\n"
                    "  what it still changes)"
                  : "while any kernel runs, the host must not touch managed memory that is not attached to\n"
                    "  an idle stream (it would crash with a segmentation fault); attach decides what it may touch");
  std::printf("pageableMemoryAccess = %d: %s\n", f.pageable_memory_access,
              f.pageable_memory_access ? "kernels may also use plain malloc memory (HMM/ATS)"
                                       : "kernels may not use plain malloc memory; managed memory is the shared kind");
}

// ---- The threads --------------------------------------------------------------------------

bool run_threads(Context& c) {
  const Settings& s = c.s;
  std::printf("\n== %d threads, each with its own stream and managed buffer, %d rounds ==\n", s.threads, s.rounds);
  const std::size_t total = s.bytes / sizeof(unsigned);
  std::vector<std::unique_ptr<LaneOwner>> lanes;
  for (int t = 0; t < s.threads; ++t) {
    const std::size_t first = total * t / s.threads, last = total * (t + 1) / s.threads;
    lanes.push_back(std::make_unique<LaneOwner>(last - first, c.table, c.device(), 100 + t));
  }
  CUDA_CHECK(cudaDeviceSynchronize());
  // With --out, the run is traced with unified memory's migrations and page faults, and the
  // trace written as timeline_threads.csv (./lab profile 03 draws it); without, nothing
  // records, so the time printed is the lanes' alone.
  std::optional<cml::trace::Recorder> recorder;
  std::optional<cml::api::Recorder> calls;  // and the lanes' calls that kept a thread waiting
  if (!c.run.out.empty()) {
    recorder.emplace(ch03::with_migrations());
    calls.emplace();
  }
  const double ms = ch03::wall_ms_on_threads(
      s.threads, c.device(), [&](int t) { ch03::run_lane(lanes[t]->lane, s.rounds, lanes[t]->signal); });
  const std::vector<cml::trace::HostRecord> waits =
      calls ? cml::api::long_calls(calls->stop()) : std::vector<cml::trace::HostRecord>{};
  CUDA_CHECK(cudaDeviceSynchronize());
  if (recorder) {
    cml::trace::Trace trace = recorder->stop();
    trace.host = waits;
    if (trace.ok)
      c.run.write("timeline_threads.csv", trace.to_csv());
    else
      std::printf("(trace unavailable: %s)\n", trace.error.c_str());
  }

  bool ok = true;
  cml::Table table("threads", {"thread", "words", "callbacks", "early host steps", "result"});
  for (std::size_t t = 0; t < lanes.size(); ++t) {
    const std::vector<unsigned> want = lanes[t]->after_rounds(s.rounds);
    const auto r = cml::compare_exact(lanes[t]->data.data(), want.data(), want.size());
    ok &= r.ok;
    // A host step that began before its round's kernel finished (the GPU marks the end
    // itself): a race, even where the data happens to come out right.
    const std::size_t early = lanes[t]->progress.early_steps.size();
    ok &= early == 0;
    table.row({std::to_string(t), std::to_string(want.size()), std::to_string(lanes[t]->signal.done()),
               std::to_string(early), r.describe()});
  }
  c.run.emit(table);
  std::printf("all threads: %s in %.2f ms\n", ok ? "PASSED" : "FAILED", ms);
  if (!ok)
    std::printf("a wrong result here usually means the host used a buffer before its kernel finished (step 1)\n");
  return ok;
}

// ---- What moves, and how fast -------------------------------------------------------------

bool run_strategies(Context& c) {
  const Settings& s = c.s;
  std::printf("\n== To the GPU: %s first touched on the CPU, then one kernel over it ==\n",
              format_bytes(s.bytes).c_str());
  LaneOwner owner(s.bytes / sizeof(unsigned), c.table, c.device(), 7);
  const ch03::Lane& lane = owner.lane;
  const ch03::PinnedCopy copy(owner);
  ch03::Lane device_lane = lane;
  device_lane.data = copy.device.data();

  // Before each run the host writes the whole buffer, as a host step would: its pages are
  // then on the CPU, and the way to the GPU starts from there.
  const cml::Work to_cpu = [&](cudaStream_t) { std::memcpy(lane.data, owner.initial.data(), s.bytes); };
  const cml::Work on_gpu = [&](cudaStream_t st) { ch03::move_pages(lane, ch03::device_location(c.device()), st); };
  const cml::Work kernel = [&](cudaStream_t) { ch03::launch_gpu_step(lane, 0); };
  const cml::Work prefetch = [&](cudaStream_t) { ch03::prefetch_to_gpu(lane); };
  const cml::Work copy_in = [&](cudaStream_t st) { copy.to_gpu(st); };
  const std::vector<ch03::Variant> strategies = {
      {"on demand: the kernel faults pages in", to_cpu, kernel},
      {"prefetch (yours), then the kernel", to_cpu,
       [&](cudaStream_t st) {
         prefetch(st);
         kernel(st);
       }},
      {"cudaMemcpyAsync from pinned, then the kernel",
       {},
       [&](cudaStream_t st) {
         copy_in(st);
         ch03::launch_gpu_step(device_lane, 0);
       }},
      {"the kernel alone, data already on the GPU", on_gpu, kernel},
      {"prefetch (yours) alone", to_cpu, prefetch},
      {"cudaMemcpyAsync from pinned alone", {}, copy_in},
  };
  const auto m = ch03::measure(strategies, lane.stream, c.run.timing, cml::Clock::Events);
  c.run.emit(ch03::migration_table("strategies", strategies, m, s.bytes, true));
  if (m.traced && m.moved[1].htod < s.bytes / 2)
    std::printf("note: CUPTI reported fewer migrated bytes than the buffer holds (see docs/03_unified_memory.md)\n");
  const std::size_t alone = strategies.size() - 2;  // the last two: each way to the GPU alone
  std::printf(
      "(GB/s counts the buffer's bytes over the whole time, kernel included)\n"
      "to the GPU alone: prefetch reaches %s of an explicit copy from pinned memory\n",
      cml::ratio_text(m.times[alone + 1], m.times[alone]).c_str());
  return true;
}

bool run_way_back(Context& c) {
  const Settings& s = c.s;
  constexpr std::size_t kPieces = 4;
  std::printf("\n== Back to the CPU: %s resident on the GPU, needed by the host ==\n", format_bytes(s.bytes).c_str());
  const std::size_t n = s.bytes / sizeof(unsigned);
  LaneOwner owner(n, c.table, c.device(), 9);
  const ch03::Lane& lane = owner.lane;
  const ch03::PinnedCopy copy(owner);
  std::vector<cml::Stream> pieces(kPieces);
  const cml::Work on_gpu = [&](cudaStream_t st) { ch03::move_pages(lane, ch03::device_location(c.device()), st); };
  // The host reads one word per 4 KiB page: each first touch faults a page (and its
  // neighbours, as the driver decides) over to the CPU.
  volatile unsigned sink = 0;
  const cml::Work touch = [&](cudaStream_t) {
    unsigned acc = 0;
    for (std::size_t i = 0; i < n; i += 1024) acc += lane.data[i];
    sink = acc;
  };
  const cml::Work in_pieces = [&](cudaStream_t) {
    const std::size_t piece = (s.bytes / kPieces + 4095) / 4096 * 4096;
    for (std::size_t i = 0; i < kPieces; ++i) {
      const std::size_t off = std::min(s.bytes, i * piece), len = std::min(piece, s.bytes - off);
      if (len > 0)
        CUDA_CHECK(
            cudaMemPrefetchAsync(reinterpret_cast<char*>(lane.data) + off, len, ch03::host_location(), 0, pieces[i]));
    }
  };
  const std::string k = std::to_string(kPieces);
  const std::vector<ch03::Variant> ways = {
      {"prefetch to the CPU (yours)", on_gpu, [&](cudaStream_t) { ch03::prefetch_to_cpu(lane); }},
      {"host touches each page (on demand)", on_gpu, touch},
      {"prefetch in " + k + " pieces on " + k + " streams", on_gpu, in_pieces},
      {"cudaMemcpyAsync managed -> pinned", on_gpu,
       [&](cudaStream_t st) {
         CUDA_CHECK(cudaMemcpyAsync(copy.pinned.data(), lane.data, s.bytes, cudaMemcpyDefault, st));
       }},
      {"cudaMemcpyAsync device -> pinned",
       {},
       [&](cudaStream_t st) {
         CUDA_CHECK(cudaMemcpyAsync(copy.pinned.data(), copy.device.data(), s.bytes, cudaMemcpyDeviceToHost, st));
       }},
  };
  c.run.emit(ch03::migration_table("way_back", ways, ch03::measure(ways, lane.stream, c.run.timing, cml::Clock::Host),
                                   s.bytes, false));
  // The data must have survived the trips.
  on_gpu(lane.stream);
  ch03::prefetch_to_cpu(lane);
  CUDA_CHECK(cudaDeviceSynchronize());
  return cml::report(cml::compare_exact(lane.data, owner.initial.data(), n), "data after the round trips");
}

// ---- Streams and threads: the per-thread default stream, and what attach changes ---------

bool run_streams(Context& c) {
  const Settings& s = c.s;
  std::printf("\n== %d threads: the default stream, and attaching buffers ==\n", s.threads);
  const std::size_t n = std::max<std::size_t>(1024, s.bytes / sizeof(unsigned) / s.threads);
  std::vector<std::unique_ptr<LaneOwner>> lanes;
  for (int t = 0; t < s.threads; ++t) lanes.push_back(std::make_unique<LaneOwner>(n, c.table, c.device(), 300 + t));
  CUDA_CHECK(cudaDeviceSynchronize());
  cml::Table t("streams", {"experiment", "ms", "noise", "note"});

  // Each thread launches a kernel that takes 5 ms on "the default stream". Compiled
  // normally, that is the one legacy stream of the device: the threads' kernels take turns.
  // With nvcc --default-stream per-thread (or cudaStreamPerThread, which this uses) each
  // thread has its own default stream and the kernels run together.
  struct DefaultStream {
    const char* name;
    cudaStream_t stream;
  };
  const double delay_ms = 5.0;
  for (const DefaultStream& d : {DefaultStream{"legacy default stream", cudaStreamLegacy},
                                 DefaultStream{"per-thread default stream", cudaStreamPerThread}}) {
    const double ms = ch03::wall_ms_on_threads(s.threads, c.device(), [&](int th) {
      ch03::Lane lane = lanes[th]->lane;
      lane.stream = d.stream;
      lane.n = 2048;              // 8 blocks: small enough that several such kernels fit on the GPU at once
      ch03::Progress wait_first;  // the kernel waits delay_ms before it writes
      wait_first.fixed_delay_ms = delay_ms;
      lane.progress = &wait_first;
      ch03::launch_gpu_step(lane, 0);
      CUDA_CHECK(cudaStreamSynchronize(d.stream));
    });
    t.row({std::string(d.name) + ": each thread one 5 ms kernel", fixed(ms, 2), cml::format_noise(cml::summarize({ms})),
           ms > 1.5 * s.threads * delay_ms / 2 ? "the threads' kernels took turns"
                                               : "the threads' kernels ran together"});
  }

  // The same rounds (kernel on the thread's stream, wait, host step) with every buffer
  // attached to all streams, then each to its own stream alone; alternated three times and
  // the medians kept, so that neither gains from going second.
  struct Attach {
    const char* name;
    unsigned flags;
    std::vector<double> ms;
  };
  Attach attaches[] = {{"cudaMemAttachGlobal", cudaMemAttachGlobal, {}},
                       {"cudaMemAttachSingle", cudaMemAttachSingle, {}}};
  for (int rep = 0; rep < 3; ++rep)
    for (Attach& a : attaches) {
      for (auto& l : lanes) CUDA_CHECK(cudaStreamAttachMemAsync(l->lane.stream, l->lane.data, 0, a.flags));
      CUDA_CHECK(cudaDeviceSynchronize());
      a.ms.push_back(ch03::wall_ms_on_threads(s.threads, c.device(), [&](int th) {
        const ch03::Lane& lane = lanes[th]->lane;
        for (int r = 0; r < s.rounds; ++r) {
          ch03::launch_gpu_step(lane, r);
          CUDA_CHECK(cudaStreamSynchronize(lane.stream));
          ch03::host_step(lane, r);
        }
      }));
    }
  for (const Attach& a : attaches) {
    const cml::Stats st = cml::summarize(a.ms);
    t.row({std::string(a.name) + ": " + std::to_string(s.rounds) + " rounds per thread, on demand",
           fixed(st.median_ms, 2), cml::format_noise(st),
           c.run.facts.concurrent_managed_access ? "median of 3, alternated; concurrentManagedAccess = 1"
                                                 : "median of 3, alternated"});
  }
  c.run.emit(t);
  return true;
}

bool run_sync_rules(Context& c) { return ch03::sync_rules(c.run, c.table, c.s.bytes); }

bool run_unchecked(Context& c) { return ch03::unchecked(c.run); }

const std::vector<cml::Mode<Context>> kModes = {
    {"threads", "the threads' rounds, checked", run_threads},
    {"strategies", "on demand vs prefetch vs explicit copy, to the GPU", run_strategies},
    {"back", "the way back to the CPU, and what helps", run_way_back},
    {"streams", "the per-thread default stream; what attach changes", run_streams},
    // Not in "all": it shows rules, measures nothing for the figures, and runs a deliberate race.
    {"sync-rules",
     "which calls count as synchronisation for managed memory, and what the host may touch while a "
     "kernel runs, checked",
     run_sync_rules, false},
    // Not in "all" either: its unordered row is a deliberate race.
    {"unchecked",
     "what CUDA does not check: kernels of two streams racing on managed words, a __managed__ variable, a "
     "broken attach promise",
     run_unchecked, false},
};

int run(int argc, char** argv) {
  Settings s;
  cml::Cli cli =
      cml::chapter_cli("03",
                       "Chapter 03 - unified memory with streams: synchronisation, attaching buffers to streams,\n"
                       "host callbacks, prefetch and advice; on-demand vs prefetched vs explicit copies.",
                       kModes, s.mode);
  cli.size("size", s.bytes, 4096, 1ull << 40, "managed bytes in all (never more than the GPU has free)")
      .integer("threads", s.threads, 1, 64, "host threads, each with its own stream and buffer")
      .integer("rounds", s.rounds, 1, 1000, "kernel -> host rounds per thread")
      .integer("table", s.table_n, 1, 1 << 28, "words in the shared read-only table");
  if (!cli.parse(argc, argv)) return cml::kExitOk;
  s.bytes = s.bytes / 4096 * 4096;  // whole pages, so prefetches and the table's modulo line up
  if (s.bytes < static_cast<std::size_t>(s.threads) * 4096)
    throw cml::UsageError("--size: at least one 4 KiB page per thread");

  const cml::Run run = cml::open_run(cli, [&](const cml::DeviceFacts& facts) {
    cml::require_feature(facts.managed_memory, "this device has no managed memory (managedMemory = 0)");
    // Managed memory may exceed what the GPU has free where concurrentManagedAccess = 1 (the
    // driver evicts pages to the host), but the run then measures eviction, and on a shared
    // or virtualised GPU it can stall for a long time: the course stays within what is free
    // and refuses the rest. Every mode but the threads and the sync rules also holds a device
    // buffer of --size.
    const std::uint64_t managed = s.bytes + s.table_n * sizeof(unsigned);
    const bool managed_only = s.mode == "threads" || s.mode == "sync-rules" || s.mode == "unchecked";
    return cml::Footprint{managed + (managed_only ? 0 : s.bytes), "--size (managed + device buffers)"};
  });
  explain(run.facts);
  // The table's owner advises it once, before any lane starts (step 4).
  const cml::ManagedBuffer<unsigned> table = ch03::random_table(s.table_n, 1);
  ch03::advise_table(table.data(), table.size(), run.facts.index);
  Context context{s, run, table};
  return cml::finish(cml::run_modes(kModes, s.mode, context));
}

}  // namespace

int main(int argc, char** argv) {
  return cml::run_program([&] { return run(argc, argv); });
}
