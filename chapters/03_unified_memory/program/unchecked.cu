// Chapter 03 — see unchecked.hpp.
#include "unchecked.hpp"

#include "harness.hpp"

#include "cml/buffers.hpp"
#include "cml/errors.hpp"
#include "cml/stream.hpp"
#include "cml/table.hpp"
#include "cml/timing.hpp"
#include "cml/verify.hpp"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <string>
#include <vector>

namespace ch03 {

namespace {

// Managed memory without an allocation call: the runtime maps it when the module loads.
__device__ __managed__ unsigned long long g_managed_total;

constexpr int kThreads = 256;
// Each thread's rounds of load-add-store on its own word: some milliseconds a kernel, so two
// launched one after the other on two streams run at the same time.
constexpr int kRounds = 1 << 15;

// Each thread adds 1 to its own word `rounds` times, every time a separate load and store
// (volatile): alone, a kernel is exact; two at once on the same words can lose increments,
// one kernel's store overwriting what the other's had added.
__global__ void bump_kernel(unsigned* words, std::size_t n, int rounds) {
  const std::size_t i = blockIdx.x * std::size_t{blockDim.x} + threadIdx.x;
  if (i >= n) return;
  volatile unsigned* w = words + i;
  for (int r = 0; r < rounds; ++r) *w = *w + 1;
}

// One block sums words[0, n) into the __managed__ variable.
__global__ void total_kernel(const unsigned* words, std::size_t n) {
  __shared__ unsigned long long partial[kThreads];
  unsigned long long sum = 0;
  for (std::size_t i = threadIdx.x; i < n; i += blockDim.x) sum += words[i];
  partial[threadIdx.x] = sum;
  __syncthreads();
  for (int half = kThreads / 2; half > 0; half /= 2) {
    if (threadIdx.x < half) partial[threadIdx.x] += partial[threadIdx.x + half];
    __syncthreads();
  }
  if (threadIdx.x == 0) g_managed_total = partial[0];
}

void bump(unsigned* words, std::size_t n, int rounds, cudaStream_t s) {
  const auto blocks = static_cast<unsigned>((n + kThreads - 1) / kThreads);
  bump_kernel<<<blocks, kThreads, 0, s>>>(words, n, rounds);
  CUDA_CHECK_LAUNCH();
}

double ms_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

// How two kernels that each add kRounds to every word are ordered.
enum class Order { OneStream, EventBetween, Unordered };

struct RaceRow {
  const char* how;
  Order order;
};

struct RaceResult {
  double ms = 0;
  std::size_t short_words = 0;  // words that came out below 2 * kRounds
  unsigned long long lost = 0;  // increments lost in all
};

RaceResult race(unsigned* words, std::size_t n, int device, Order order) {
  const cml::Stream a, b;
  const cml::Event a_done(cudaEventDisableTiming);
  std::fill(words, words + n, 0u);
  // The pages on the GPU before the clock starts: the run times the kernels, not the faults.
  CUDA_CHECK(cudaMemPrefetchAsync(words, n * sizeof(unsigned), device_location(device), 0, a));
  CUDA_CHECK(cudaStreamSynchronize(a));
  const auto t0 = std::chrono::steady_clock::now();
  bump(words, n, kRounds, a);
  if (order == Order::EventBetween) {
    a_done.record(a);
    CUDA_CHECK(cudaStreamWaitEvent(b, a_done, 0));
  }
  bump(words, n, kRounds, order == Order::OneStream ? static_cast<cudaStream_t>(a) : static_cast<cudaStream_t>(b));
  CUDA_CHECK(cudaDeviceSynchronize());
  RaceResult r;
  r.ms = ms_since(t0);
  const unsigned want = 2u * kRounds;
  for (std::size_t i = 0; i < n; ++i)
    if (words[i] < want) ++r.short_words, r.lost += want - words[i];
  return r;
}

bool races(const cml::Run& run, std::size_t n) {
  std::printf(
      "\n-- Two kernels on the same managed words --\n"
      "each kernel: %zu threads, each adding 1 to its own word %d times (a load and a store each time);\n"
      "two such kernels should leave every word at %d\n",
      n, kRounds, 2 * kRounds);
  const cml::ManagedBuffer<unsigned> words(n);
  const std::vector<RaceRow> rows = {
      {"one stream: the second kernel starts after the first ends", Order::OneStream},
      {"two streams, the second waits for the first's event", Order::EventBetween},
      {"two streams, nothing orders them (a race)", Order::Unordered},
  };
  cml::Table t("races",
               {"how the two kernels were ordered", "both done ms", "words short", "increments lost", "result"});
  bool ok = true;
  double ordered_ms = 0;
  for (const RaceRow& row : rows) {
    const RaceResult r = race(words.data(), n, run.facts.index, row.order);
    std::string result;
    if (row.order == Order::Unordered) {
      // Not a failure either way: a race may come out right. The time says whether they ran
      // at once (about half the ordered time).
      result = r.lost > 0 ? "increments lost: the kernels ran at once and raced"
                          : "nothing lost this time (a race can come out right); ran in " +
                                cml::fixed(r.ms / std::max(ordered_ms, 1e-9), 2) + " of the ordered time";
    } else {
      ordered_ms = r.ms;
      result = r.short_words == 0 ? "PASSED" : "FAILED: an ordered pair lost increments";
      ok &= r.short_words == 0;
    }
    t.row({row.how, cml::fixed(r.ms, 2), std::to_string(r.short_words), std::to_string(r.lost), result});
  }
  run.emit(t);
  return ok;
}

bool managed_variable(const cml::Run& run, std::size_t n) {
  std::printf(
      "\n-- A __managed__ variable --\n"
      "declared `__device__ __managed__ unsigned long long g_managed_total;`, no allocation call: a kernel on a new\n"
      "non-blocking stream, never attached to it, sums %zu managed words into it; the host reads it after\n"
      "cudaStreamSynchronize\n",
      n);
  const cml::ManagedBuffer<unsigned> words(n);
  unsigned long long want = 0;
  for (std::size_t i = 0; i < n; ++i) want += words[i] = static_cast<unsigned>(i % 1000);
  unsigned long long* address = nullptr;
  CUDA_CHECK(cudaGetSymbolAddress(reinterpret_cast<void**>(&address), g_managed_total));
  cudaPointerAttributes attr{};
  CUDA_CHECK(cudaPointerGetAttributes(&attr, address));
  g_managed_total = 0;  // the host writes it directly: no copy, no symbol call
  const cml::Stream s;
  total_kernel<<<1, kThreads, 0, s>>>(words.data(), n);
  CUDA_CHECK_LAUNCH();
  CUDA_CHECK(cudaStreamSynchronize(s));
  const bool right = g_managed_total == want;
  const bool managed = attr.type == cudaMemoryTypeManaged;
  cml::Table t("managed_variable", {"what", "seen", "result"});
  t.row({"cudaPointerGetAttributes(&g_managed_total).type", managed ? "cudaMemoryTypeManaged" : "not managed",
         managed ? "PASSED" : "FAILED"});
  t.row({"the host reads the kernel's total", std::to_string(g_managed_total) + " (CPU: " + std::to_string(want) + ")",
         right ? "PASSED" : "FAILED"});
  run.emit(t);
  return right && managed;
}

bool attach_promise(const cml::Run& run, std::size_t n) {
  std::printf(
      "\n-- The attach promise --\n"
      "a managed buffer attached to stream A alone (cudaStreamAttachMemAsync, cudaMemAttachSingle); then a kernel on\n"
      "stream B adds 1 to each of its %zu words: the promise broken\n",
      n);
  cml::Table t("attach_promise", {"what", "seen", "result"});
  if (!run.facts.concurrent_managed_access) {
    t.row({"a kernel on stream B uses a buffer attached to stream A",
           "not run: with concurrentManagedAccess = 0 the host could fault on it while B's kernel runs", "-"});
    run.emit(t);
    return true;
  }
  const cml::ManagedBuffer<unsigned> words(n);
  std::fill(words.begin(), words.end(), 7u);
  const cml::Stream a, b;
  CUDA_CHECK(cudaStreamAttachMemAsync(a, words.data(), 0, cudaMemAttachSingle));
  CUDA_CHECK(cudaStreamSynchronize(a));
  const auto blocks = static_cast<unsigned>((n + kThreads - 1) / kThreads);
  bump_kernel<<<blocks, kThreads, 0, b>>>(words.data(), n, 1);
  const cudaError_t launch = cudaGetLastError();
  const cudaError_t finish = cudaStreamSynchronize(b);
  const auto landed = static_cast<std::size_t>(std::count(words.begin(), words.end(), 8u));
  t.row({"what CUDA returned for the launch and the wait",
         std::string(cudaGetErrorName(launch)) + ", " + cudaGetErrorName(finish),
         launch == cudaSuccess && finish == cudaSuccess ? "no error: the driver does not check the promise"
                                                        : "CUDA refused it"});
  t.row({"words the kernel on stream B changed", std::to_string(landed) + " of " + std::to_string(n),
         landed == n ? "every write landed" : "FAILED: some writes are missing"});
  run.emit(t);
  CUDA_CHECK(finish);
  return landed == n;
}

}  // namespace

bool unchecked(const cml::Run& run) {
  std::printf("\n== What CUDA does not check about managed memory ==\n");
  // One word per thread of one block per SM: both race kernels fit on the GPU at once.
  const std::size_t n = static_cast<std::size_t>(run.facts.sm_count) * kThreads;
  bool ok = races(run, n);
  ok &= managed_variable(run, n);
  ok &= attach_promise(run, n);
  std::printf("what CUDA does not check: %s\n", ok ? "PASSED" : "FAILED");
  return ok;
}

}  // namespace ch03
