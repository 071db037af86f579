// Chapter 04 — --mode=l2-persist: an L2 access policy window that keeps a table in L2 while
// a kernel streams a large array through it (docs/04, "Keeping a table in L2").
//
// The rule: since compute capability 8.0, a part of L2 can be set aside for persisting
// accesses (cudaDeviceSetLimit(cudaLimitPersistingL2CacheSize), at most
// cudaDevAttrMaxPersistingL2CacheSize), and a stream's access policy window marks an address
// range whose accesses persist there (hitProp), for a fraction hitRatio of its lines. Normal
// accesses may use the set-aside part only while persisting lines do not. The limit belongs
// to the context and persisting lines stay persisting after the kernel, so both are put back
// when the experiment ends (cudaCtxResetPersistingL2Cache, the previous limit).
#include "l2_persist.hpp"

#include "checked.hpp"
#include "coalescing.cuh"

#include "cml/errors.hpp"
#include "cml/l2_persist.hpp"
#include "cml/ncu.hpp"
#include "cml/sass.hpp"
#include "cml/stream.hpp"
#include "cml/table.hpp"
#include "cml/timing.hpp"

#include <algorithm>
#include <cstdio>
#include <optional>
#include <string>
#include <vector>

namespace ch04 {

namespace {

using cml::fixed;

// The stream is written this many times over, so that the table is read many times between
// the first reads (which miss whatever the policy) and the end.
constexpr int kPasses = 4;

// Each iteration reads one float of the table through L2 only (__ldcg: L1 would hide the
// reads L2 sees) and writes two float4 of the stream: 32 bytes written per 4 bytes of table
// read, so between two reads of a table line the stream pushes 8 table sizes through L2.
__global__ void table_stream(const float* __restrict__ table, unsigned table_floats, float4* __restrict__ out,
                             std::size_t half, int passes) {
  const std::size_t step = static_cast<std::size_t>(gridDim.x) * blockDim.x;
  const std::size_t first = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x;
  // The table index follows h modulo table_floats without a 64-bit division per iteration.
  const unsigned start = static_cast<unsigned>(first % table_floats),
                 advance = static_cast<unsigned>(step % table_floats);
  for (int pass = 0; pass < passes; ++pass) {
    unsigned t = start;
    for (std::size_t h = first; h < half; h += step) {
      const float v = __ldcg(table + t);
      out[h] = make_float4(v, v + 1, v + 2, v + 3);
      out[h + half] = make_float4(v + 4, v + 5, v + 6, v + 7);
      t += advance;
      if (t >= table_floats) t -= table_floats;
    }
  }
}

using cml::persist_limits;
using cml::PersistingCarveOut;
using cml::PersistLimits;

// The window on `stream`: accesses to [base, base + bytes) persist for a fraction hit_ratio of
// its lines and stream (evict first) for the rest; bytes = 0 turns it off.
void set_window(cudaStream_t stream, const void* base, std::size_t bytes, float hit_ratio) {
  cudaStreamAttrValue v{};
  v.accessPolicyWindow.base_ptr = const_cast<void*>(base);
  v.accessPolicyWindow.num_bytes = bytes;
  v.accessPolicyWindow.hitRatio = bytes > 0 ? hit_ratio : 0.0f;
  v.accessPolicyWindow.hitProp = bytes > 0 ? cudaAccessPropertyPersisting : cudaAccessPropertyNormal;
  v.accessPolicyWindow.missProp = bytes > 0 ? cudaAccessPropertyStreaming : cudaAccessPropertyNormal;
  CUDA_CHECK(cudaStreamSetAttribute(stream, cudaStreamAttributeAccessPolicyWindow, &v));
}

// The experiment: the table (small whole numbers: the sums compare exactly), the stream
// (arrays.out, written kPasses times), the carve-out and the stream its kernels run on.
class Experiment {
 public:
  Experiment(const cml::Run& run, std::size_t table_bytes, const Arrays& arrays)
      : limits_(persist_limits(run.facts.index)), arrays_(arrays), host_(table_bytes / 4), table_(host_.size()) {
    for (std::size_t k = 0; k < host_.size(); ++k) host_[k] = static_cast<float>(k * 7 % 1024);
    cml::upload(table_.data(), host_.data(), host_.size());
    if (arrays.out.size() % 8 != 0) throw cml::CheckFailed("l2-persist: the stream must be a multiple of 32 bytes");
    if (limits_.max_persisting == 0) {
      why_no_window_ = "this GPU reports 0 bytes of persisting L2 (cudaDevAttrMaxPersistingL2CacheSize)";
      return;
    }
    carve_out_.emplace(std::min(table_bytes, limits_.max_persisting));
    why_no_window_ = carve_out_->why_not();
    if (why_no_window_.empty() && carve_out_->granted() == 0) why_no_window_ = "the driver set aside 0 bytes";
  }

  const PersistLimits& limits() const { return limits_; }
  const std::optional<PersistingCarveOut>& carve_out() const { return carve_out_; }
  const std::string& why_no_window() const { return why_no_window_; }
  bool has_window() const { return why_no_window_.empty(); }
  // The fraction of the table's lines that may persist: all of them when the set-aside holds it.
  float hit_ratio() const {
    return has_window() ? static_cast<float>(std::min(
                              1.0, static_cast<double>(carve_out_->granted()) / static_cast<double>(table_.bytes())))
                        : 0.0f;
  }
  std::size_t table_bytes() const { return table_.bytes(); }
  std::size_t table_read_bytes() const { return kPasses * half() * 4; }
  std::size_t written_bytes() const { return kPasses * arrays_.out.bytes(); }
  cudaStream_t stream() const { return stream_.get(); }

  // Untimed, before each run: persisting lines back to normal (none left from the run
  // before), then the window on or off. Nothing where L2 has no set-aside: the calls could
  // fail there, and there is nothing to undo.
  cml::Work prepare(bool window) const {
    return [this, window](cudaStream_t s) {
      if (!has_window()) return;
      CUDA_CHECK(cudaCtxResetPersistingL2Cache());
      set_window(s, table_.data(), window ? table_.bytes() : 0, hit_ratio());
    };
  }
  cml::Work launch() const {
    return [this](cudaStream_t s) {
      table_stream<<<grid_for(half()), 256, 0, s>>>(table_.data(), static_cast<unsigned>(host_.size()),
                                                    reinterpret_cast<float4*>(arrays_.out.data()), half(), kPasses);
      CUDA_CHECK_LAUNCH();
    };
  }
  // Float j of the stream: a table value plus its place in the pair of float4 written.
  cml::VerifyResult verify() const {
    const std::size_t quarter = 4 * half();  // floats in the first half of the stream
    return arrays_.verify(arrays_.out.size(), [&](std::size_t j) {
      const std::size_t in_half = j % quarter;
      return host_[in_half / 4 % host_.size()] + static_cast<float>(in_half % 4 + (j < quarter ? 0 : 4));
    });
  }

 private:
  std::size_t half() const { return arrays_.out.size() / 8; }  // float4 in each half of the stream

  PersistLimits limits_;
  const Arrays& arrays_;
  std::vector<float> host_;
  cml::DeviceBuffer<float> table_;
  std::optional<PersistingCarveOut> carve_out_;
  std::string why_no_window_;
  cml::Stream stream_;
};

const std::vector<std::string> kMetrics = {"lts__t_sectors_srcunit_tex_op_read_lookup_hit.sum",
                                           "lts__t_sectors_srcunit_tex_op_read_lookup_miss.sum",
                                           "dram__bytes_read.sum"};

}  // namespace

std::size_t l2_table_bytes(std::uint64_t requested, const cml::DeviceFacts& facts) {
  const PersistLimits lim = persist_limits(facts.index);
  std::size_t t = requested;
  if (t == 0) {
    t = facts.l2_bytes / 4;
    if (lim.max_persisting > 0) t = std::min(t, lim.max_persisting);
    if (t >= (1u << 20)) t = t >> 20 << 20;  // whole MiB, as a person would ask for it
  }
  t = t / 4 * 4;
  if (t < (64u << 10))
    throw cml::UsageError("--table=" + std::to_string(requested) + ": the table needs at least 64 KiB");
  if (lim.max_window > 0 && t > lim.max_window)
    throw cml::UsageError("--table=" + cml::format_bytes(t) + " is larger than " + facts.name +
                          "'s largest access policy window, " + cml::format_bytes(lim.max_window) +
                          " (cudaDevAttrMaxAccessPolicyWindowSize)");
  return t;
}

void launch_l2_persist(const cml::Run& run, std::size_t table_bytes, const Arrays& arrays) {
  const Experiment e(run, table_bytes, arrays);
  for (const bool window : {false, true}) {
    if (window && !e.has_window()) break;
    e.prepare(window)(e.stream());
    e.launch()(e.stream());
    CUDA_CHECK(cudaStreamSynchronize(e.stream()));
  }
}

namespace {

// What the checked and timed part leaves for the table once the experiment is gone.
struct Timed {
  std::vector<std::string> names;
  std::vector<cml::Stats> stats;
  std::size_t table_bytes = 0, moved_bytes = 0, table_read_bytes = 0;
  bool ok = true;
};

// Prints what the device reports, checks both runs and times them interleaved. The
// experiment ends on return, giving its set-aside and persisting lines back, so the program
// ncu runs next starts from the L2 this one found.
Timed check_and_time(const cml::Run& run, std::size_t table_bytes, const Arrays& arrays) {
  const Experiment e(run, table_bytes, arrays);
  std::printf(
      "\n== A %s table read over and over while %s are written through L2, without and with a persisting "
      "window ==\n",
      cml::format_bytes(e.table_bytes()).c_str(), cml::format_bytes(e.written_bytes()).c_str());
  std::printf(
      "L2 %s; persisting L2 at most %s (cudaDevAttrMaxPersistingL2CacheSize); access policy window at most "
      "%s (cudaDevAttrMaxAccessPolicyWindowSize)\n",
      cml::format_bytes(run.facts.l2_bytes).c_str(), cml::format_bytes(e.limits().max_persisting).c_str(),
      cml::format_bytes(e.limits().max_window).c_str());
  if (e.has_window())
    std::printf(
        "set aside for persisting lines: %s (asked %s; the limit was %s and is restored at the end); "
        "hitRatio %.3f\n",
        cml::format_bytes(e.carve_out()->granted()).c_str(),
        cml::format_bytes(std::min(e.table_bytes(), e.limits().max_persisting)).c_str(),
        cml::format_bytes(e.carve_out()->previous()).c_str(), e.hit_ratio());
  else
    std::printf("no window: %s; only the run without one is shown\n", e.why_no_window().c_str());

  Timed out;
  out.table_bytes = e.table_bytes();
  out.table_read_bytes = e.table_read_bytes();
  out.moved_bytes = e.written_bytes() + e.table_read_bytes();
  out.names = {"no window"};
  std::vector<cml::Work> prepares = {e.prepare(false)}, works = {e.launch()};
  if (e.has_window()) {
    out.names.emplace_back("window on the table: persisting, misses streaming");
    prepares.push_back(e.prepare(true));
    works.push_back(e.launch());
  }
  for (std::size_t k = 0; k < works.size(); ++k) {
    const cml::Work prepared = [&, k](cudaStream_t s) {
      prepares[k](s);
      works[k](s);
    };
    out.ok &= run_checked(
        arrays, e.stream(), prepared, [&] { return e.verify(); }, out.names[k]);
  }
  out.stats = cml::time_interleaved(prepares, works, e.stream(), run.timing);
  return out;
}

}  // namespace

bool run_l2_persist(const cml::Run& run, std::size_t bytes, std::size_t table_bytes, const Arrays& arrays,
                    const char* profile_mode) {
  const Timed tm = check_and_time(run, table_bytes, arrays);
  const auto r = cml::ncu::profile(
      {cml::sass::self_executable(), std::string("--mode=") + profile_mode, "--size=" + std::to_string(bytes),
       "--table=" + std::to_string(tm.table_bytes), "--device=" + std::to_string(run.facts.index)},
      "table_stream", kMetrics, {"CML_TRACE=off"});
  const bool counted = r.ok && r.kernels.size() == tm.names.size();
  const auto value = [&](std::size_t k, std::size_t m) {
    const auto& v = r.kernels[k].values;
    return v.count(kMetrics[m]) ? v.at(kMetrics[m]) : 0.0;
  };
  cml::Table t("l2_persist", {"run", "ms", "noise", "GB/s (written + table read)", "speed over no window",
                              "ncu L2 hit rate, table reads", "ncu DRAM read / table bytes read"});
  for (std::size_t k = 0; k < tm.names.size(); ++k) {
    const double lookups = counted ? value(k, 0) + value(k, 1) : 0;
    t.row({tm.names[k], fixed(tm.stats[k].median_ms, 3), cml::format_noise(tm.stats[k]),
           fixed(cml::gbps(tm.moved_bytes, tm.stats[k].median_ms), 0), cml::ratio_text(tm.stats[0], tm.stats[k]),
           lookups > 0 ? fixed(value(k, 0) / lookups, 3) : "-",
           counted ? fixed(value(k, 2) / static_cast<double>(tm.table_read_bytes), 3) : "-"});
  }
  run.emit(t);
  if (!r.ok)
    std::printf("(ncu columns not measured: %s)\n", r.error.c_str());
  else if (!counted)
    std::printf("(ncu profiled %zu kernels, %zu expected: its columns not shown)\n", r.kernels.size(), tm.names.size());
  std::printf(
      "(every L2 read of the kernel is a table read: the stream is only written; ncu flushes the caches "
      "before each kernel it profiles)\n");
  return tm.ok;
}

}  // namespace ch04
