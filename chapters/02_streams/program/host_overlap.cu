// Chapter 02 — see host_overlap.hpp.
#include "host_overlap.hpp"

#include "cml/errors.hpp"
#include "cml/table.hpp"
#include "cml/timing.hpp"
#include "cml/verify.hpp"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <memory>
#include <string>

namespace ch02 {

namespace {

// The host's work: the CPU reference of the first `count` outputs, into `out` (allocated
// once: the pass is arithmetic and memory traffic, not page faults). Each pass reads the
// input again, as a check of the previous batch would.
void host_work(const Problem& p, std::size_t count, std::vector<int>& out) {
  for (std::size_t i = 0; i < count; ++i) out[i] = expected(p.host_in[i], p.cycles, p.add_value);
}

void wait_all(const std::vector<cudaStream_t>& streams) {
  for (cudaStream_t s : streams) CUDA_CHECK(cudaStreamSynchronize(s));
}

}  // namespace

bool host_overlap_mode(const Problem& p, const Plan& plan, const std::vector<cudaStream_t>& streams,
                       const cml::Run& run, cudaStream_t stream) {
  using cml::fixed;
  const std::vector<int> want = expected_output(p);
  std::vector<int> scratch(p.n);
  const auto pipeline = [&](cudaStream_t) {
    run_staged(p, streams, plan.chunks, plan.order);
    wait_all(streams);
  };
  // One pass over every output against the pipeline: the host work is the share of a pass
  // that takes about as long as the pipeline (on an H100 a whole pass took 30 times longer).
  const auto calibrate = cml::time_interleaved({pipeline, [&](cudaStream_t) { host_work(p, p.n, scratch); }}, stream,
                                               run.timing, cml::Clock::Host);
  const double share = std::min(1.0, calibrate[0].median_ms / calibrate[1].median_ms);
  const std::size_t count = std::max<std::size_t>(1, static_cast<std::size_t>(share * static_cast<double>(p.n)));
  std::printf(
      "\n== The host's work beside your staged pipeline (%d streams, %zu chunks; host clock, interleaved) ==\n"
      "the host work: the CPU reference of %zu of the %zu outputs, about as long as the pipeline\n",
      plan.streams, plan.chunks, count, p.n);

  // The same problem over pageable buffers (new[]): their copies are staged by the driver.
  Problem pageable = p;
  const std::unique_ptr<int[]> in(new int[p.n]), out(new int[p.n]);
  std::memcpy(in.get(), p.host_in, p.n * sizeof(int));
  pageable.host_in = in.get();
  pageable.host_out = out.get();

  const auto serial = [&](cudaStream_t) {
    run_staged(p, streams, plan.chunks, plan.order);
    wait_all(streams);
    host_work(p, count, scratch);
  };
  const auto beside = [&](const Problem& q) {
    return [&, q](cudaStream_t) {
      run_staged(q, streams, plan.chunks, plan.order);
      host_work(q, count, scratch);  // runs while the pipeline does: nothing waited for yet
      wait_all(streams);
    };
  };
  bool ok = true;
  const auto check = [&](const Problem& q, const std::function<void(cudaStream_t)>& f, const std::string& what) {
    std::memset(q.host_out, 0xA5, q.n * sizeof(int));
    f(stream);
    ok &= cml::report(cml::compare_exact(q.host_out, want.data(), q.n), what);
  };
  check(p, serial, "pipeline, then the host work");
  check(p, beside(p), "the host work beside the pipeline");
  check(pageable, beside(pageable), "the same from pageable buffers");
  const auto st = cml::time_interleaved(
      {pipeline, [&](cudaStream_t) { host_work(p, count, scratch); }, serial, beside(p), beside(pageable)}, stream,
      run.timing, cml::Clock::Host);

  // Hidden: how much of the shorter of the two (pipeline, host work) the overlap saved.
  const double gpu = st[0].median_ms, host = st[1].median_ms;
  const auto hidden = [&](double ms) { return (gpu + host - ms) / std::min(gpu, host); };
  cml::Table t("host_overlap", {"how", "median ms", "noise", "of pipeline + host work", "shorter one hidden"});
  const char* names[] = {"pipeline alone (then wait)", "host work alone", "pipeline, wait, then the host work",
                         "enqueue, host work, then wait", "enqueue, host work, then wait; pageable buffers"};
  for (std::size_t k = 0; k < st.size(); ++k)
    t.row({names[k], fixed(st[k].median_ms, 3), cml::format_noise(st[k]),
           k < 2 ? "-" : fixed(st[k].median_ms / (gpu + host), 3), k < 2 ? "-" : fixed(hidden(st[k].median_ms), 3)});
  run.emit(t);
  std::printf(
      "(shorter one hidden: 1.0 when the row takes only as long as the longer of the two, 0 when it takes their "
      "sum)\n");
  return ok;
}

}  // namespace ch02
