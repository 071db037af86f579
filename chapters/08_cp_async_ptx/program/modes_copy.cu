// Chapter 08 — the program's step-1 modes: the tile copy at every width and cache level
// (checked on ragged lengths, then timed beside cudaMemcpy), and the experiment of the
// source notes with its two neighbours. See modes.hpp.
#include "modes.hpp"

#include "cml/buffers.hpp"
#include "cml/errors.hpp"
#include "cml/table.hpp"
#include "cml/timing.hpp"
#include "cml/verify.hpp"

#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>

namespace ch08 {

namespace {

// One run of copy_tiles on `host`, into an output poisoned with 0xFF bytes: what landed.
std::vector<Word> copy_once(const CopyKind& k, const std::vector<Word>& host, int blocks, cudaStream_t stream) {
  const std::size_t n = host.size(), padded = tile_count(n) * kTileWords;
  cml::DeviceBuffer<Word> in(std::max<std::size_t>(n, 1)), out(std::max<std::size_t>(padded, 1));
  cml::upload(in.data(), host.data(), n);
  cml::fill_bytes(out.data(), 0xFF, out.bytes());
  scrub_shared_memory(stream);  // a read before the copy landed finds garbage, not the last run's tile
  copy_tiles(k.bytes, k.cache, in.data(), n, out.data(), blocks, stream);
  CUDA_CHECK(cudaStreamSynchronize(stream));
  std::vector<Word> got(padded);
  if (padded > 0) CUDA_CHECK(cudaMemcpy(got.data(), out.data(), padded * sizeof(Word), cudaMemcpyDeviceToHost));
  return got;
}

std::string numbers(const std::vector<int>& v) {
  std::string s;
  for (const int x : v) s += (s.empty() ? "" : " ") + std::to_string(x);
  return s;
}

}  // namespace

bool copy_mode(Context& c) {
  std::printf(
      "\n== The tile copy through shared memory: every width and cache level, arrays ending inside a piece "
      "and inside a tile (the rest of the last tile must be zeros) ==\n");
  bool ok = true;
  for (const auto& k : copy_kinds()) {
    bool kind_ok = true;
    for (const auto& cs : copy_cases()) {
      const auto host = make_input(cs.n);
      const auto r = check_copy(copy_once(k, host, cs.blocks, c.stream), padded_copy(host), cs.n);
      if (!r.ok)
        kind_ok &= cml::report(r, std::string(k.name) + ", n = " + std::to_string(cs.n) + " (" + cs.what + ")");
    }
    if (kind_ok) std::printf("%s (%s): PASSED on %zu lengths\n", k.name, k.kernel, copy_cases().size());
    ok &= kind_ok;
  }

  const std::size_t n = c.s.size / sizeof(Word), padded = tile_count(n) * kTileWords;
  const int blocks = c.blocks(c.s.blocks_per_sm);
  std::printf("\n== %s MiB through shared memory, %d blocks per SM; GB/s = bytes read + written per second ==\n",
              cml::fixed(c.s.size / 1048576.0, 0).c_str(), c.s.blocks_per_sm);
  const auto host = make_input(n);
  cml::DeviceBuffer<Word> in(n), out(padded);
  cml::upload(in.data(), host.data(), n);
  std::vector<cml::Work> work = {[&](cudaStream_t st) {
    CUDA_CHECK(cudaMemcpyAsync(out.data(), in.data(), n * sizeof(Word), cudaMemcpyDeviceToDevice, st));
  }};
  for (const auto& k : copy_kinds())
    work.push_back([&, k](cudaStream_t st) { copy_tiles(k.bytes, k.cache, in.data(), n, out.data(), blocks, st); });
  const auto st = cml::time_interleaved(work, c.stream, c.run.timing);
  cml::Table t("copy", {"copy", "kernel", "ms", "GB/s", "of cudaMemcpy"});
  const std::size_t bytes = 2 * n * sizeof(Word);
  t.row({"cudaMemcpy device to device", "-", cml::with_noise(st[0]), cml::fixed(cml::gbps(bytes, st[0].median_ms), 0),
         "1.000"});
  for (std::size_t i = 0; i < copy_kinds().size(); ++i) {
    const auto& k = copy_kinds()[i];
    t.row({k.name, k.kernel, cml::with_noise(st[i + 1]), cml::fixed(cml::gbps(bytes, st[i + 1].median_ms), 0),
           cml::fixed(st[0].median_ms / st[i + 1].median_ms, 3)});
  }
  c.run.emit(t);
  // The timed copies' result, each kind once more: the array, then zeros.
  std::vector<Word> got(padded);
  for (const auto& k : copy_kinds()) {
    CUDA_CHECK(cudaMemsetAsync(out.data(), 0xFF, out.bytes(), c.stream));
    copy_tiles(k.bytes, k.cache, in.data(), n, out.data(), blocks, c.stream);
    CUDA_CHECK(cudaMemcpyAsync(got.data(), out.data(), padded * sizeof(Word), cudaMemcpyDeviceToHost, c.stream));
    CUDA_CHECK(cudaStreamSynchronize(c.stream));
    const auto r = check_copy(got, padded_copy(host), n);
    if (!r.ok) ok &= cml::report(r, std::string(k.name) + " (the timed size)");
  }
  return ok;
}

bool reverse_mode(Context& c) {
  std::printf(
      "\n== The experiment of the source notes: thread t copies a[threads - 1 - t] into shared[t] with one "
      "cp.async, waits for its own copies, writes b[t] ==\n");
  struct Reading {
    Reverse how;
    int threads;
    const char* what;
  };
  const Reading readings[] = {
      {Reverse::own, 32, "32 threads, b[t] = shared[t], no barrier (the source's experiment)"},
      {Reverse::neighbour_synced, 64, "64 threads, b[t] = shared[(t + 32) % 64] after __syncthreads"},
      {Reverse::neighbour_racy, 64, "64 threads, b[t] = shared[(t + 32) % 64] with no barrier (WRONG)"},
  };
  bool ok = true;
  for (const auto& r : readings) {
    const auto a = experiment_input(r.threads);
    cml::DeviceBuffer<int> a_d(a.size()), b_d(a.size());
    cml::upload(a_d.data(), a.data(), a.size());
    cml::fill_bytes(b_d.data(), 0xFF, b_d.bytes());
    reverse_warp(r.how, a_d.data(), b_d.data(), r.threads, c.stream);
    CUDA_CHECK(cudaStreamSynchronize(c.stream));
    std::vector<int> b(a.size());
    CUDA_CHECK(cudaMemcpy(b.data(), b_d.data(), b_d.bytes(), cudaMemcpyDeviceToHost));
    const auto want = experiment_expected(r.how, r.threads);
    const auto v = cml::compare_exact(b.data(), want.data(), b.size());
    if (r.how == Reverse::own) std::printf("a: %s\nb: %s\n", numbers(a).c_str(), numbers(b).c_str());
    if (r.how != Reverse::neighbour_racy) {
      ok &= cml::report(v, r.what);
    } else {
      std::printf(
          "%s: %s in this run — a race may still give the right numbers; wait_group covers the calling "
          "thread's copies only; compute-sanitizer --tool racecheck is the tool that looks for such reads (docs/08)\n",
          r.what, v.ok ? "right" : "wrong");
    }
  }
  return ok;
}

}  // namespace ch08
