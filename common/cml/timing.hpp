// The one timing helper of the course: warm-up, repetitions, median (with min, max and the
// noise). Never time a single run. Variants that are compared are timed interleaved
// (A B A B ...), so that clock and thermal drift fall on all of them alike.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <functional>
#include <string>
#include <vector>

namespace cml {

struct Stats {
  double median_ms = 0;
  double min_ms = 0;
  double max_ms = 0;
  int reps = 0;
  // The samples' relative spread, as nvbench reports it ("Noise"): their standard
  // deviation (n - 1 in the denominator) over their mean, in percent. Two medians whose
  // ratio differs from 1 by less than about the noise of each are not told apart by this
  // run. NaN (printed "?") when there is only one sample: one run has no spread to show.
  double noise_pct = 0;
};

// Median, min, max and noise of samples in milliseconds (an even count takes the mean of
// the two middle values). Throws std::invalid_argument for no samples.
Stats summarize(std::vector<double> samples_ms);

// Bytes per second, in GB/s (10^9), for `bytes` moved in `ms` milliseconds.
double gbps(std::size_t bytes, double ms);

struct TimingOptions {
  int warmup = 2;  // runs before timing: module load, first-touch and clock ramp stay out
  int iters = 10;  // timed repetitions
};

enum class Clock {
  Events,  // CUDA events recorded on the stream around the work: GPU time of what fn enqueues
  Host,    // steady_clock around fn and a device synchronise: includes host-side work
};

using Work = std::function<void(cudaStream_t)>;

// Times each variant `opts.iters` times, interleaved, after `opts.warmup` interleaved rounds.
// Returns one Stats per variant, in order.
std::vector<Stats> time_interleaved(const std::vector<Work>& variants, cudaStream_t stream, TimingOptions opts = {},
                                    Clock clock = Clock::Events);

// The same, with prepare[k] run and waited for, untimed, before every run of variant k
// (e.g. moving managed pages back to the CPU before timing their way to the GPU). An empty
// Work in `prepare` means nothing to prepare.
std::vector<Stats> time_interleaved(const std::vector<Work>& prepare, const std::vector<Work>& variants,
                                    cudaStream_t stream, TimingOptions opts = {}, Clock clock = Clock::Events);

// One variant alone.
Stats time_work(const Work& work, cudaStream_t stream, TimingOptions opts = {}, Clock clock = Clock::Events);

// "1.234 ms" / "12.3 us": a time in the unit that reads best.
std::string format_ms(double ms);

// How the noise reads beside a number, for tables and test messages:
//   format_noise(s)  -> "±0.8 %"                        (one decimal; "±? %" for one sample)
//   with_noise(s)    -> "1.234 ms ±0.8 %"               (the median, then its noise)
//   ratio_text(a, b) -> "0.93 (noise 0.8 % / 1.2 %)"    (a's median over b's, two decimals,
//                                                        then a's noise / b's noise)
// A speed test's message shows ratio_text, so a learner whose ratio misses a bar by less
// than the noise sees that it was this run's noise, not their code. ratio_text says "n/a"
// for the ratio when b's median is not positive.
std::string format_noise(const Stats& s);
std::string with_noise(const Stats& s);
std::string ratio_text(const Stats& a, const Stats& b);

}  // namespace cml
