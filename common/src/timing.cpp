// Timing: see cml/timing.hpp.
#include "cml/timing.hpp"

#include "cml/errors.hpp"
#include "cml/stream.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <limits>
#include <numeric>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace cml {

namespace {
// nvbench's noise: the unbiased sample standard deviation over the mean, in percent.
double relative_spread_pct(const std::vector<double>& s) {
  if (s.size() < 2) return std::numeric_limits<double>::quiet_NaN();
  const double n = static_cast<double>(s.size());
  const double mean = std::accumulate(s.begin(), s.end(), 0.0) / n;
  if (mean <= 0) return 0.0;  // all samples 0: nothing spreads
  double squares = 0;
  for (double x : s) squares += (x - mean) * (x - mean);
  return 100.0 * std::sqrt(squares / (n - 1)) / mean;
}

std::string one_decimal(double v) {
  if (std::isnan(v)) return "?";
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f", v);
  return buf;
}
}  // namespace

Stats summarize(std::vector<double> s) {
  if (s.empty()) throw std::invalid_argument("summarize: no samples");
  std::sort(s.begin(), s.end());
  const std::size_t n = s.size();
  Stats out;
  out.median_ms = (n % 2 == 1) ? s[n / 2] : 0.5 * (s[n / 2 - 1] + s[n / 2]);
  out.min_ms = s.front();
  out.max_ms = s.back();
  out.reps = static_cast<int>(n);
  out.noise_pct = relative_spread_pct(s);
  return out;
}

double gbps(std::size_t bytes, double ms) { return ms > 0 ? static_cast<double>(bytes) / (ms * 1e-3) / 1e9 : 0.0; }

namespace {
double run_once(const Work& work, cudaStream_t stream, Clock clock, const Event& start, const Event& stop) {
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

std::vector<Stats> time_interleaved(const std::vector<Work>& variants, cudaStream_t stream, TimingOptions opts,
                                    Clock clock) {
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

std::string format_noise(const Stats& s) { return "±" + one_decimal(s.noise_pct) + " %"; }

std::string with_noise(const Stats& s) { return format_ms(s.median_ms) + " " + format_noise(s); }

std::string ratio_text(const Stats& a, const Stats& b) {
  std::string ratio = "n/a";
  if (b.median_ms > 0) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.2f", a.median_ms / b.median_ms);
    ratio = buf;
  }
  return ratio + " (noise " + one_decimal(a.noise_pct) + " % / " + one_decimal(b.noise_pct) + " %)";
}

}  // namespace cml
