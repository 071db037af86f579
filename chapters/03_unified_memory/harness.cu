// Chapter 03 — see harness.hpp: what the program and the tests share.
#include "harness.hpp"

#include "cml/device.hpp"
#include "cml/errors.hpp"

#include <chrono>
#include <cstring>
#include <random>
#include <thread>

namespace ch03 {

namespace {

void fill_random(unsigned* p, std::size_t n, unsigned seed) {
  std::minstd_rand rng(seed);
  for (std::size_t i = 0; i < n; ++i) p[i] = static_cast<unsigned>(rng());
}

}  // namespace

cml::ManagedBuffer<unsigned> random_table(std::size_t n, unsigned seed) {
  cml::ManagedBuffer<unsigned> table(n);
  fill_random(table.data(), n, seed);
  return table;
}

LaneOwner::LaneOwner(std::size_t n, const cml::ManagedBuffer<unsigned>& table, int device, unsigned seed)
    : data(n), initial(n), finished(1, cudaHostAllocMapped), blocks(1) {
  fill_random(data.data(), n, seed);
  std::memcpy(initial.data(), data.data(), n * sizeof(unsigned));
  finished.data()[0] = 0;
  CUDA_CHECK(cudaMemset(blocks.data(), 0, sizeof(unsigned)));
  CUDA_CHECK(cudaDeviceSynchronize());  // lands before a kernel on the lane's non-blocking stream
  progress.finished_round = finished.data();
  progress.blocks_done = blocks.data();
  lane = Lane{data.data(), n, table.data(), table.size(), stream.get(), device, &progress};
}

std::vector<unsigned> LaneOwner::after_rounds(int rounds) const {
  std::vector<unsigned> want = initial;
  reference_rounds(want.data(), want.size(), lane.table, lane.table_n, rounds);
  return want;
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

void move_pages(const Lane& lane, cudaMemLocation where, cudaStream_t stream) {
  CUDA_CHECK(cudaMemPrefetchAsync(lane.data, lane.n * sizeof(unsigned), where, 0, stream));
}

PinnedCopy::PinnedCopy(const LaneOwner& owner)
    : bytes(owner.initial.size() * sizeof(unsigned)), pinned(owner.initial.size()), device(owner.initial.size()) {
  std::memcpy(pinned.data(), owner.initial.data(), bytes);
}

void PinnedCopy::to_gpu(cudaStream_t stream) const {
  CUDA_CHECK(cudaMemcpyAsync(device.data(), pinned.data(), bytes, cudaMemcpyHostToDevice, stream));
}

std::vector<std::exception_ptr> on_threads(int count, int device, const std::function<void(int)>& fn) {
  std::vector<std::exception_ptr> errors(static_cast<std::size_t>(count));
  std::vector<std::thread> pool;
  for (int t = 0; t < count; ++t)
    pool.emplace_back([&, t] {
      try {
        cml::enter_device(device);  // the current device is per host thread
        fn(t);
      } catch (...) {
        errors[static_cast<std::size_t>(t)] = std::current_exception();
      }
    });
  for (auto& th : pool) th.join();
  return errors;
}

std::string message(const std::exception_ptr& e) {
  if (!e) return "";
  try {
    std::rethrow_exception(e);
  } catch (const std::exception& x) {
    return x.what();
  } catch (...) {
    return "an exception that is not a std::exception";
  }
}

void Migration::add(const cml::trace::UnifiedRecord& u) {
  using cml::trace::UnifiedKind;
  const bool user = u.migration_cause == 1;  // CUPTI_ACTIVITY_UNIFIED_MEMORY_MIGRATION_CAUSE_USER
  if (u.kind == UnifiedKind::BytesHtoD) {
    htod += u.value;
    if (user) htod_user += u.value;
  }
  if (u.kind == UnifiedKind::BytesDtoH) {
    dtoh += u.value;
    if (user) dtoh_user += u.value;
  }
  if (u.kind == UnifiedKind::GpuPageFault) gpu_faults += u.value;
  if (u.kind == UnifiedKind::CpuPageFault) cpu_faults += u.value;
}

double wall_ms_on_threads(int count, int device, const std::function<void(int)>& fn) {
  const auto t0 = std::chrono::steady_clock::now();
  const auto errors = on_threads(count, device, fn);
  const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  for (const auto& e : errors)
    if (e) std::rethrow_exception(e);
  return ms;
}

cml::trace::Options with_migrations() {
  cml::trace::Options opts;
  opts.unified_memory = true;
  return opts;
}

Migration migrated(const cml::trace::Trace& trace) {
  Migration m;
  for (const auto& u : trace.unified) m.add(u);
  return m;
}

Measured measure(const std::vector<Variant>& variants, cudaStream_t stream, cml::TimingOptions timing,
                 cml::Clock clock) {
  std::vector<cml::Work> prepare, work;
  for (const auto& v : variants) {
    prepare.push_back(v.prepare);
    work.push_back(v.work);
  }
  Measured m;
  m.times = cml::time_interleaved(prepare, work, stream, timing, clock);

  // Unified-memory records can arrive after the work that caused them has finished, so
  // each variant is not traced alone: one recording covers them all, and each record counts
  // for the variant whose time window [start, end] holds its start.
  struct Window {
    std::uint64_t start = 0, end = 0;
  };
  cml::trace::Recorder recorder(with_migrations());
  std::vector<Window> windows;
  for (std::size_t k = 0; k < variants.size(); ++k) {
    if (prepare[k]) prepare[k](stream);
    CUDA_CHECK(cudaDeviceSynchronize());
    Window w;
    w.start = cml::trace::timestamp_ns();
    work[k](stream);
    CUDA_CHECK(cudaDeviceSynchronize());
    w.end = cml::trace::timestamp_ns();
    windows.push_back(w);
  }
  const auto trace = recorder.stop();
  m.traced = trace.ok;
  m.trace_error = trace.error;
  m.moved.resize(variants.size());
  for (const auto& u : trace.unified)
    for (std::size_t k = 0; k < windows.size(); ++k)
      if (u.when.start >= windows[k].start && u.when.start <= windows[k].end) m.moved[k].add(u);
  return m;
}

namespace {
std::string mib(std::uint64_t b) { return cml::fixed(static_cast<double>(b) / (1 << 20), 1); }
}  // namespace

cml::Table migration_table(const std::string& name, const std::vector<Variant>& variants, const Measured& m,
                           std::size_t bytes, bool to_gpu) {
  cml::Table t(name, {to_gpu ? "strategy" : "way", "ms", "noise", "GB/s", to_gpu ? "MiB to GPU" : "MiB to CPU",
                      "of which prefetched", to_gpu ? "GPU page faults" : "CPU page faults"});
  for (std::size_t k = 0; k < variants.size(); ++k) {
    const Migration& moved = m.moved[k];
    const auto traced = [&](const std::string& text) { return m.traced ? text : "-"; };
    t.row({variants[k].name, cml::fixed(m.times[k].median_ms, 3), cml::format_noise(m.times[k]),
           cml::fixed(cml::gbps(bytes, m.times[k].median_ms), 1), traced(mib(to_gpu ? moved.htod : moved.dtoh)),
           traced(mib(to_gpu ? moved.htod_user : moved.dtoh_user)),
           m.traced ? std::to_string(to_gpu ? moved.gpu_faults : moved.cpu_faults) : m.trace_error});
  }
  return t;
}

}  // namespace ch03
