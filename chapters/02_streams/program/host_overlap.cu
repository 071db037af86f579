// Chapter 02 — see host_overlap.hpp.
#include "host_overlap.hpp"

#include "cml/errors.hpp"
#include "cml/table.hpp"
#include "cml/timing.hpp"
#include "cml/verify.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <memory>
#include <string>

namespace ch02 {

namespace {

// The host's work: the CPU reference of every output element, `repeats` times (each pass
// reads the input again, as a check of the previous batch would). Returns the last pass.
std::vector<int> host_work(const Problem& p, int repeats) {
  std::vector<int> want;
  for (int r = 0; r < repeats; ++r) want = expected_output(p);
  return want;
}

void wait_all(const std::vector<cudaStream_t>& streams) {
  for (cudaStream_t s : streams) CUDA_CHECK(cudaStreamSynchronize(s));
}

}  // namespace

bool host_overlap_mode(const Problem& p, const Plan& plan, const std::vector<cudaStream_t>& streams,
                       const cml::Run& run, cudaStream_t stream) {
  using cml::fixed;
  // The pipeline alone, and one pass of the host work alone: how many passes match it.
  const auto alone = cml::time_interleaved({[&](cudaStream_t) {
                                              run_staged(p, streams, plan.chunks, plan.order);
                                              wait_all(streams);
                                            },
                                            [&](cudaStream_t) { (void)host_work(p, 1); }},
                                           stream, run.timing, cml::Clock::Host);
  const int repeats = std::max(1, static_cast<int>(std::lround(alone[0].median_ms / alone[1].median_ms)));
  std::printf(
      "\n== The host's work beside your staged pipeline (%d streams, %zu chunks; host clock, interleaved) ==\n"
      "the host work: the CPU reference of all %zu outputs, %d time(s), about as long as the pipeline\n",
      plan.streams, plan.chunks, p.n, repeats);

  // The same problem over pageable buffers (new[]): their copies are staged by the driver.
  Problem pageable = p;
  const std::unique_ptr<int[]> in(new int[p.n]), out(new int[p.n]);
  std::memcpy(in.get(), p.host_in, p.n * sizeof(int));
  pageable.host_in = in.get();
  pageable.host_out = out.get();

  std::vector<int> want;
  const auto serial = [&](cudaStream_t) {
    run_staged(p, streams, plan.chunks, plan.order);
    wait_all(streams);
    want = host_work(p, repeats);
  };
  const auto beside = [&](const Problem& q) {
    return [&, q](cudaStream_t) {
      run_staged(q, streams, plan.chunks, plan.order);
      want = host_work(q, repeats);  // runs while the pipeline does: nothing waited for yet
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
  const auto st = cml::time_interleaved({serial, beside(p), beside(pageable)}, stream, run.timing, cml::Clock::Host);

  // Hidden: how much of the shorter of the two (pipeline, host work) the overlap saved.
  const double gpu = alone[0].median_ms, host = repeats * alone[1].median_ms;
  const auto hidden = [&](double ms) { return (gpu + host - ms) / std::min(gpu, host); };
  cml::Table t("host_overlap", {"how", "median ms", "noise", "of pipeline + host work", "shorter one hidden"});
  t.row({"pipeline alone (then wait)", fixed(gpu, 3), cml::format_noise(alone[0]), "-", "-"});
  t.row({"host work alone", fixed(host, 3), "-", "-", "-"});
  const char* names[] = {"pipeline, wait, then the host work", "enqueue, host work, then wait",
                         "enqueue, host work, then wait; pageable buffers"};
  for (std::size_t k = 0; k < st.size(); ++k)
    t.row({names[k], fixed(st[k].median_ms, 3), cml::format_noise(st[k]), fixed(st[k].median_ms / (gpu + host), 3),
           fixed(hidden(st[k].median_ms), 3)});
  run.emit(t);
  std::printf(
      "(shorter one hidden: 1.0 when the row takes only as long as the longer of the two, 0 when it takes their "
      "sum)\n");
  return ok;
}

}  // namespace ch02
