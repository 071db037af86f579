// Chapter 02 — see harness.hpp.
#include "harness.hpp"

#include "cml/api_trace.hpp"

#include "cml/intervals.hpp"
#include "cml/stream.hpp"

#include <algorithm>
#include <cstring>

namespace ch02 {

cml::VerifyResult verify_pipeline(const Problem& p, const std::function<void()>& issue) {
  return verify_pipeline(p, issue, expected_output(p));
}

cml::VerifyResult verify_pipeline(const Problem& p, const std::function<void()>& issue, const std::vector<int>& want) {
  std::memset(p.host_out, 0xA5, p.n * sizeof(int));
  issue();
  CUDA_CHECK(cudaDeviceSynchronize());
  return cml::compare_exact(p.host_out, want.data(), p.n);
}

std::vector<int> expected_output(const Problem& p) {
  std::vector<int> want(p.n);
  for (std::size_t i = 0; i < p.n; ++i) want[i] = expected(p.host_in[i], p.cycles, p.add_value);
  return want;
}

Phases measure_copies(const Problem& p, cml::TimingOptions timing) {
  cml::Stream a, b;
  const std::size_t bytes = p.n * sizeof(int);
  const auto st = cml::time_interleaved(
      {[&](cudaStream_t x) { CUDA_CHECK(cudaMemcpyAsync(p.device_in, p.host_in, bytes, cudaMemcpyHostToDevice, x)); },
       [&](cudaStream_t x) { CUDA_CHECK(cudaMemcpyAsync(p.host_out, p.device_out, bytes, cudaMemcpyDeviceToHost, x)); },
       [&](cudaStream_t) {
         CUDA_CHECK(cudaMemcpyAsync(p.device_in, p.host_in, bytes, cudaMemcpyHostToDevice, a));
         CUDA_CHECK(cudaMemcpyAsync(p.host_out, p.device_out, bytes, cudaMemcpyDeviceToHost, b));
       }},
      a, timing, cml::Clock::Host);
  return {st[0].median_ms, st[1].median_ms, st[2].median_ms};
}

double measure_kernel(const Problem& p, int cycles, cml::TimingOptions timing, cudaStream_t stream) {
  return cml::time_work([&](cudaStream_t x) { launch_add(p.device_in, p.device_out, p.n, cycles, p.add_value, x); },
                        stream, timing, cml::Clock::Events)
      .median_ms;
}

int balanced_cycles(const Problem& p, const Phases& copies, cml::TimingOptions timing, cudaStream_t stream) {
  const double t0 = measure_kernel(p, 0, timing, stream);
  const double t1 = measure_kernel(p, 1024, timing, stream);
  const double target = std::max(copies.h2d, copies.d2h);
  if (t1 <= t0) return 0;
  const double c = 1024.0 * (target - t0) / (t1 - t0);
  return std::clamp(static_cast<int>(c / 64.0 + 0.5) * 64, 0, 1 << 20);
}

double measure_chunk_cost(const Problem& p, cml::TimingOptions timing) {
  constexpr std::size_t kChunks = 64;
  cml::Stream streams[3];
  const auto st = cml::time_work(
      [&](cudaStream_t) {
        for (std::size_t c = 0; c < kChunks; ++c) {
          const std::size_t i = c % p.n;  // an int of its own per chunk where n allows
          const cudaStream_t s = streams[c % 3];
          CUDA_CHECK(cudaMemcpyAsync(p.device_in + i, p.host_in + i, sizeof(int), cudaMemcpyHostToDevice, s));
          launch_add(p.device_in + i, p.device_out + i, 1, 0, p.add_value, s);
          CUDA_CHECK(cudaMemcpyAsync(p.host_out + i, p.device_out + i, sizeof(int), cudaMemcpyDeviceToHost, s));
        }
      },
      streams[0], timing, cml::Clock::Host);
  return st.median_ms / static_cast<double>(kChunks);
}

Measured measured(const Phases& copies, double kernel_ms, double chunk_ms, int copy_engines) {
  Measured m;
  m.h2d_ms = copies.h2d;
  m.kernel_ms = kernel_ms;
  m.d2h_ms = copies.d2h;
  m.both_ms = copies.both;
  m.chunk_ms = chunk_ms;
  m.copy_engines = copy_engines;
  return m;
}

Overlap traced(const std::function<void()>& issue, bool host_calls) {
  cml::trace::Recorder recorder;
  issue();
  recorder.discard();
  std::vector<cml::trace::HostRecord> waits;
  if (host_calls) {
    cml::api::Recorder calls;
    issue();
    waits = cml::api::long_calls(calls.stop());
  } else {
    issue();
  }
  Overlap o;
  o.trace = recorder.stop();
  o.trace.host = std::move(waits);
  o.ok = o.trace.ok && !o.trace.kernels.empty();
  o.error = o.trace.ok ? (o.trace.kernels.empty() ? "the trace recorded no kernel" : "") : o.trace.error;
  auto copies = o.trace.copy_intervals(cml::trace::CopyKind::HtoD);
  const auto out = o.trace.copy_intervals(cml::trace::CopyKind::DtoH);
  o.in_out = cml::overlap_fraction(copies, out);
  copies.insert(copies.end(), out.begin(), out.end());
  o.copy_kernel = cml::overlap_fraction(copies, o.trace.kernel_intervals());
  return o;
}

}  // namespace ch02
