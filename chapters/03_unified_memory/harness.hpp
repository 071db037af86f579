// Chapter 03 — what the program and the tests share: a lane with everything it owns, the
// chapter's own moves of managed pages (setting the stage, never the learner's prefetch),
// host threads that run lanes at once, and the bytes that migrated as CUPTI saw them.
#pragma once

#include "unified_memory.cuh"

#include "cml/buffers.hpp"
#include "cml/stream.hpp"
#include "cml/table.hpp"
#include "cml/timing.hpp"
#include "cml/trace.hpp"

#include <cstdint>
#include <exception>
#include <functional>
#include <string>
#include <vector>

namespace ch03 {

// A managed table of n pseudo-random words, the same for the same seed, written on the CPU.
// Its owner advises it (advise_table, the learner's) before any lane uses it.
cml::ManagedBuffer<unsigned> random_table(std::size_t n, unsigned seed);

// One lane and what it owns: a managed buffer first touched on the CPU (so its pages start
// there), a copy of its initial contents for the CPU reference, a stream, a round signal.
struct LaneOwner {
  LaneOwner(std::size_t n, const cml::ManagedBuffer<unsigned>& table, int device, unsigned seed);
  // What the buffer must hold after `rounds` rounds of run_lane.
  std::vector<unsigned> after_rounds(int rounds) const;

  cml::ManagedBuffer<unsigned> data;
  std::vector<unsigned> initial;
  cml::Stream stream;
  RoundSignal signal;
  cml::PinnedBuffer<unsigned> finished;  // Progress::finished_round: the GPU writes it
  cml::DeviceBuffer<unsigned> blocks;    // Progress::blocks_done
  Progress progress;
  Lane lane;
};

// ---- Where pages go ------------------------------------------------------------------------

cudaMemLocation host_location();
cudaMemLocation device_location(int device);
// Enqueues on `stream` the move of all of the lane's pages to `where`.
void move_pages(const Lane& lane, cudaMemLocation where, cudaStream_t stream);

// The explicit way to the GPU that prefetching is held to: the lane's initial words in
// pinned memory, copied with cudaMemcpyAsync into a device buffer of the same size.
struct PinnedCopy {
  explicit PinnedCopy(const LaneOwner& owner);
  void to_gpu(cudaStream_t stream) const;

  std::size_t bytes;
  cml::PinnedBuffer<unsigned> pinned;
  cml::DeviceBuffer<unsigned> device;
};

// ---- Host threads --------------------------------------------------------------------------

// Runs fn(t) for t = 0 .. count - 1, each on its own host thread with `device` current,
// all at once. Returns what each thread threw (null where nothing): a thread's failure is
// reported by the caller instead of ending the process.
std::vector<std::exception_ptr> on_threads(int count, int device, const std::function<void(int)>& fn);
// What an exception says ("" for none).
std::string message(const std::exception_ptr& e);
// on_threads for the program: rethrows the first failure and returns the wall time in ms.
double wall_ms_on_threads(int count, int device, const std::function<void(int)>& fn);

// ---- What migrated -------------------------------------------------------------------------

// Bytes that migrated each way and page faults; *_user: the bytes a prefetch moved
// (CUPTI's migration cause USER), the rest moved on demand.
struct Migration {
  std::uint64_t htod = 0, htod_user = 0, dtoh = 0, dtoh_user = 0, gpu_faults = 0, cpu_faults = 0;
  void add(const cml::trace::UnifiedRecord& record);
};
// What a recording needs for migrations: CUPTI's unified-memory records besides the rest.
cml::trace::Options with_migrations();
// Everything a trace recorded with those options.
Migration migrated(const cml::trace::Trace& trace);

// A way of moving the data: what to do first, untimed, and what to time.
struct Variant {
  std::string name;
  cml::Work prepare, work;
};

struct Measured {
  std::vector<cml::Stats> times;  // one per variant, timed interleaved
  std::vector<Migration> moved;   // one per variant, when traced
  bool traced = false;
  std::string trace_error;  // why not, when !traced
};

// Times the variants interleaved, then runs each once more under one CUPTI recording for
// the bytes it migrated.
Measured measure(const std::vector<Variant>& variants, cudaStream_t stream, cml::TimingOptions timing,
                 cml::Clock clock);
// The program's table of a measurement: per variant its time and noise, its speed over
// `bytes`, and what migrated to the GPU (to_gpu) or to the CPU.
cml::Table migration_table(const std::string& name, const std::vector<Variant>& variants, const Measured& m,
                           std::size_t bytes, bool to_gpu);

}  // namespace ch03
