// Timing: see cml/timing.hpp.
#include "cml/timing.hpp"

#include "cml/errors.hpp"
#include "cml/stream.hpp"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <stdexcept>

namespace cml {

Stats summarize(std::vector<double> s) {
  if (s.empty()) throw std::invalid_argument("summarize: no samples");
  std::sort(s.begin(), s.end());
  const std::size_t n = s.size();
  Stats out;
  out.median_ms = (n % 2 == 1) ? s[n / 2] : 0.5 * (s[n / 2 - 1] + s[n / 2]);
  out.min_ms = s.front();
  out.max_ms = s.back();
  out.reps = static_cast<int>(n);
  return out;
}

double gbps(std::size_t bytes, double ms) {
  return ms > 0 ? static_cast<double>(bytes) / (ms * 1e-3) / 1e9 : 0.0;
}

namespace {
double run_once(const Work& work, cudaStream_t stream, Clock clock, const Event& start,
                const Event& stop) {
  if (clock == Clock::Events) {
    start.record(stream);
    work(stream);
    stop.record(stream);
    stop.synchronize();
    return stop.since(start);
  }
  CUDA_CHECK(cudaDeviceSynchronize());
  const auto t0 = std::chrono::steady_clock::now();
  work(stream);
  CUDA_CHECK(cudaDeviceSynchronize());
  const auto t1 = std::chrono::steady_clock::now();
  return std::chrono::duration<double, std::milli>(t1 - t0).count();
}
}  // namespace

std::vector<Stats> time_interleaved(const std::vector<Work>& variants, cudaStream_t stream,
                                    TimingOptions opts, Clock clock) {
  return time_interleaved({}, variants, stream, opts, clock);
}

std::vector<Stats> time_interleaved(const std::vector<Work>& prepare, const std::vector<Work>& variants,
                                    cudaStream_t stream, TimingOptions opts, Clock clock) {
  if (opts.iters < 1) throw std::invalid_argument("time_interleaved: iters must be >= 1");
  if (!prepare.empty() && prepare.size() != variants.size())
    throw std::invalid_argument("time_interleaved: one prepare step per variant, or none");
  Event start, stop;
  const auto once = [&](std::size_t k) {
    if (!prepare.empty() && prepare[k]) {
      prepare[k](stream);
      CUDA_CHECK(cudaDeviceSynchronize());
    }
    return run_once(variants[k], stream, clock, start, stop);
  };
  for (int w = 0; w < opts.warmup; ++w)
    for (std::size_t k = 0; k < variants.size(); ++k) once(k);
  std::vector<std::vector<double>> samples(variants.size());
  for (int i = 0; i < opts.iters; ++i)
    for (std::size_t k = 0; k < variants.size(); ++k) samples[k].push_back(once(k));
  std::vector<Stats> out;
  for (auto& s : samples) out.push_back(summarize(std::move(s)));
  return out;
}

Stats time_work(const Work& work, cudaStream_t stream, TimingOptions opts, Clock clock) {
  return time_interleaved({work}, stream, opts, clock).front();
}

std::string format_ms(double ms) {
  char buf[32];
  if (ms < 1.0)
    std::snprintf(buf, sizeof buf, "%.1f us", ms * 1e3);
  else
    std::snprintf(buf, sizeof buf, "%.3f ms", ms);
  return buf;
}

}  // namespace cml
