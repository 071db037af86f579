// Chapter 04's test helpers (tests/test_04_coalescing.cpp includes this, and nothing else does):
// the sizes, the launchers' grid rules, the CUPTI view of each copy and the sector model's
// profile. The cases and their bars are in the .cpp.
#pragma once

#include "coalescing.cuh"
#include "api_calls.hpp"
#include "cuda_fault.hpp"
#include "enqueue_only.hpp"
#include "integrity.hpp"
#include "gpu.hpp"
#include "guarded_input.hpp"
#include "jitter.hpp"
#include "harness.hpp"
#include "kernel_sass.hpp"
#include "launch_geometry.hpp"
#include "ncu_evidence.hpp"
#include "past_int_range.hpp"
#include "sanitizer_target.hpp"
#include "target_case.hpp"
#include "cml/buffers.hpp"
#include "cml/cli.hpp"
#include "cml/ncu.hpp"
#include "cml/sass.hpp"
#include "cml/stream.hpp"
#include "cml/table.hpp"
#include "cml/timing.hpp"
#include "cml/trace.hpp"
#include "cml/verify.hpp"
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <initializer_list>
#include <random>
#include <string>
#include <utility>
#include <vector>

namespace {

using cml::test::jitter;  // sizes no code can special-case

// The most threads grid_for gives a kernel: a size above a few times this needs a kernel
// that loops, or a launch that covers the array.
std::size_t one_pass_threads() { return static_cast<std::size_t>(ch04::grid_for(~std::size_t{0} >> 8)) * 256; }

// The launcher watched with CUPTI: it must only enqueue (no call that waits for the GPU)
// the named kernel, once, on the stream it is given, and nothing else (no cudaMemcpy, no
// memset, no helper kernel, no work on another stream). "" when so. `ran`, when given,
// receives the name CUPTI recorded for the kernel.
std::string runs_only(const char* kernel, const std::function<void(cudaStream_t)>& launch,
                      std::string* ran_name = nullptr) {
  cml::Stream s;
  CUDA_CHECK(cudaDeviceSynchronize());
  // Watched while the stream is held shut: a launcher that waits for its kernel (a
  // synchronise, a query) shows, which the kernel records alone would not.
  const cml::test::Enqueued e = cml::test::watch_enqueue({s.get()}, [&] { launch(s.get()); });
  const cml::trace::Trace& t = e.trace;
  if (!t.ok) return "the CUPTI trace failed, so the kernel that ran cannot be checked: " + t.error;
  if (!e.calls.ok) return "CUPTI's callback API failed, so this cannot be checked: " + e.calls.error;
  if (const std::string err = e.error(); !err.empty())
    return "the launcher must only enqueue its kernel and return (coalescing.cuh), but " + err;
  // First: a kernel on another stream is the one a reader of `stream` (a copy back, the
  // speed bar's events) is not ordered after.
  if (const std::string elsewhere = cml::test::work_elsewhere(t, s); !elsewhere.empty())
    return "the launcher's work must run on the stream it is given (coalescing.cuh), but " + elsewhere +
           ": launch with <<<grid, block, 0, stream>>>, or the caller's copies and timings on `stream` do not wait "
           "for your kernel";
  std::string ran;
  std::size_t named = 0;
  for (const auto& k : t.kernels) {
    ran += (ran.empty() ? "" : ", ") + k.name;
    named += k.name.find(kernel) != std::string::npos;
  }
  if (named == 1 && t.kernels.size() == 1 && t.copies.empty() && t.memsets.empty()) {
    if (ran_name) *ran_name = t.kernels[0].name;
    return "";
  }
  return std::string("the launcher ran ") + std::to_string(t.kernels.size()) + " kernel(s) (" + ran + "), " +
         std::to_string(t.copies.size()) + " copy(ies) and " + std::to_string(t.memsets.size()) +
         " memset(s); want one launch of " + kernel + " and nothing else: the tests read that kernel's code";
}

// A working set four times the L2 or more, so DRAM is measured, within what is free.
std::size_t large_n() {
  const auto& d = cml::test::device();
  std::size_t bytes = std::max<std::size_t>(256u << 20, 4 * d.l2_bytes);
  while (3 * bytes > d.free_bytes && bytes > (16u << 20)) bytes /= 2;
  return bytes / 4;
}

// ---- The launchers' grids (coalescing.cuh, "What every launcher of steps 1-4 does") ------
// A launch is held to them at sizes where grid_for's cap does not hide a grid sized for the
// wrong count: below one pass of its full grid, a grid for n / 4 or 4 n elements differs
// from one for n; above it, every such grid_for gives the same capped grid.

// What a launcher's grid must cover: at least `least` work items with a thread each (up to
// grid_for's full grid), and no more blocks than `most` items need.
struct GridRule {
  const char* launcher;  // "copy_coalesced"
  const char* items;     // what n counts: "floats", "particles"
  const char* per;       // what a thread is for: "one thread per float"
  const char* advice;    // the grid the hints give, and the step
  std::function<std::uint64_t(std::size_t)> least, most;
};

// The rule of one thread per item: n threads at least (up to grid_for's full grid), and no
// more blocks than n items need.
GridRule one_thread_per_item(const char* launcher, const char* items, const char* per, const char* advice) {
  const auto count = [](std::size_t n) { return std::uint64_t{n}; };
  return {launcher, items, per, advice, count, count};
}

// Sizes below, near and past one pass of grid_for's full grid, for a launcher whose thread
// takes `per_thread` items (a float4 group: 4).
std::vector<std::size_t> grid_sizes(std::size_t per_thread) {
  const std::size_t full = one_pass_threads() * per_thread;
  return {jitter(2000 * per_thread), jitter(full / 3), jitter(3 * full)};
}

// "" when the launch `k` of `rule.launcher` over n items keeps the rule; else the mistake,
// in numbers.
std::string grid_error(const GridRule& rule, const cml::trace::KernelRecord& k, std::size_t n) {
  using cml::test::volume;
  const std::uint64_t blocks = volume(k.grid), per_block = volume(k.block), threads = blocks * per_block;
  const std::uint64_t full = one_pass_threads();
  const std::uint64_t least = std::min<std::uint64_t>(rule.least(n), full);
  const std::uint64_t most = cml::test::blocks_for(rule.most(n), per_block);
  const std::string yours = std::string(rule.launcher) + " on n = " + std::to_string(n) + " " + rule.items +
                            ": your grid has " + std::to_string(blocks) + " blocks of " + std::to_string(per_block) +
                            " threads (" + std::to_string(threads) + " threads)";
  const auto times = [](std::uint64_t a, std::uint64_t b) {
    return cml::fixed(static_cast<double>(a) / static_cast<double>(b), 1);
  };
  if (!cml::test::one_dimensional(k.grid) || !cml::test::one_dimensional(k.block))
    return yours + ", " + cml::test::geometry_text(k) + "; the contract wants a 1-D grid of 1-D blocks: " + rule.advice;
  if (blocks > most)
    return yours + "; the contract wants at most " + std::to_string(most) + " blocks of " + std::to_string(per_block) +
           " threads for " + std::to_string(rule.most(n)) + " work items (" + rule.per +
           ", no block without work): " + times(blocks, most) +
           "x too many blocks. Is the grid sized for bytes, or for another element's size? " + rule.advice;
  if (threads < least)
    return yours + "; the contract wants at least " + std::to_string(least) + " threads (" +
           (least < full ? std::string(rule.per) : "grid_for's full grid: every SM busy") +
           "): " + times(least, threads) +
           "x too few threads, and SMs idle while the work would fill them. Is the grid "
           "sized for fewer items (n / 4, n / 32) than there are? " +
           rule.advice;
  return "";
}

// At each size, `launched(n)` (the launcher over fresh buffers of n items, through
// cml::test::launched_kernel) and its one kernel's grid held to the rule.
void check_grid(const GridRule& rule, const std::vector<std::size_t>& sizes,
                const std::function<cml::test::Launched(std::size_t)>& launched) {
  for (const std::size_t n : sizes) {
    CAPTURE(n);
    const cml::test::Launched l = launched(n);
    {
      INFO(rule.launcher << " on n = " << n << ": " << l.error);
      REQUIRE(l.error.empty());
    }
    const std::string err = grid_error(rule, l.kernel, n);
    INFO(err);
    CHECK(err.empty());
  }
}

// For each n: runs `launch(in, out, n, stream)` (the function `name`) over fresh arrays and
// checks out[i] == f(in[i]) for i < n, nothing written past n, and nothing read past n: the
// input ends at an unmapped page, so a load past in[n - 1] faults even when its value is
// never stored (loads of a whole group issued before the bound check of each).
template <typename Launch, typename F>
void check_elementwise(const char* name, std::initializer_list<std::size_t> sizes, Launch launch, F f,
                       const char* note = "") {
  for (const std::size_t n : sizes) {
    CAPTURE(n);
    const ch04::Arrays a(n + 64);  // room past the end of `out`: a write there is caught
    const cml::test::GuardedInput<float> in(std::vector<float>(a.host.begin(), a.host.begin() + n));
    cml::Stream s;
    const auto fault = cml::test::cuda_fault([&] {
      launch(in.data(), a.out.data(), n, s.get());
      s.synchronize();
    });
    if (fault)
      FAIL(name << " with n = " << n << " faulted (" << *fault << ")"
                << in.read_past("in", "a thread whose element is n or past it", *fault) << note);
    const auto r = a.verify(n, [&](std::size_t i) { return f(a.host[i]); });
    INFO(r.describe() << note);
    CHECK(r.ok);
  }
}

// `copy(in, out, n, stream)` (the launcher `name`) over n floats, timed interleaved with the
// plain one-float-per-thread grid-stride loop (offset_copy at offset 0) and cudaMemcpy: its
// speed over the loop's (the loop's time over its own) must reach `bar`.
template <typename Copy>
void check_over_plain(const char* name, std::size_t n, Copy copy, double bar, const char* advice) {
  const ch04::Arrays a(n);
  cml::Stream s;
  const auto st =
      cml::time_interleaved({[&](cudaStream_t x) { ch04::launch_offset_copy(a.in.data(), a.out.data(), n, 0, 4, x); },
                             [&](cudaStream_t x) { copy(a.in.data(), a.out.data(), n, x); }, a.memcpy_work(n)},
                            s, {2, 10});
  INFO(name << " over " << cml::format_bytes(n * 4)
            << ": its speed over the plain one-float-per-thread grid-stride loop's, measured in this run (the loop's "
               "time over yours), is "
            << cml::ratio_text(st[0], st[1]) << " (of cudaMemcpy device to device: " << cml::ratio_text(st[2], st[1])
            << "); want at least " << bar << ": " << advice);
  CHECK(st[0].median_ms / st[1].median_ms >= bar);
}

const std::vector<std::string> kLoadMetrics = {"l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum",
                                               "l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum"};

// Runs this test executable again under ncu, on the hidden [.target] case below (the whole
// list, or with target "coalesced" copy_coalesced alone), and returns each profiled
// kernel's sectors per request, in launch order (-1 where ncu counted no request).
std::vector<std::pair<std::string, double>> profiled_sectors_per_request(std::string& why_not,
                                                                         const std::string& target = "1") {
  const auto r = cml::ncu::profile({cml::sass::self_executable(), "[.target]"},
                                   "offset_copy|stride_copy|scale_kernel|copy_vectorized_kernel|copy_coalesced_kernel|"
                                   "advance_aos_kernel|advance_soa_kernel",
                                   kLoadMetrics,
                                   // one process, whatever the caller's isolation: ncu profiles it
                                   {"CML_TRACE=off", "CML_TARGET=" + target, "CML_ISOLATE=off"});
  std::vector<std::pair<std::string, double>> out;
  why_not = r.ok ? r.trouble : r.error;  // with kernels: what went wrong in the run, if anything
  if (!r.ok) return out;
  for (const auto& k : r.kernels)  // -1 (no requests) fails every model, which is never negative
    out.emplace_back(k.kernel, cml::test::sectors_per_request(k, kLoadMetrics[1], kLoadMetrics[0]));
  return out;
}

// What the [.target] case launches first, in order; each is held to the sector model.
const std::vector<ch04::Pattern> kTargets = {
    {ch04::Pattern::Offset, 0, 4},  {ch04::Pattern::Offset, 1, 4},  {ch04::Pattern::Offset, 8, 4},
    {ch04::Pattern::Offset, 31, 4}, {ch04::Pattern::Stride, 2, 4},  {ch04::Pattern::Stride, 4, 4},
    {ch04::Pattern::Stride, 32, 4}, {ch04::Pattern::Offset, 0, 8},  {ch04::Pattern::Offset, 1, 8},
    {ch04::Pattern::Offset, 0, 16}, {ch04::Pattern::Offset, 1, 16},
};
constexpr std::size_t kTargetN = std::size_t{1} << 22;

}  // namespace
