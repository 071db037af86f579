// A maintainer's experiment, not part of the course: when does staging through shared
// memory pay? A window sum over a 1 GiB array, every word read by W outputs, two ways:
// staged (each tile and its halo copied once with 16-byte cp.async, then W reads per output
// from shared memory) and direct (W reads per output from global memory through the
// read-only path: the reuse is left to L1). The measurements behind chapter 07's "When
// staging pays" (docs/07_memcpy_async.md). Meson builds it with the course (common/'s
// timing and tiled-sum helpers); run build/tools/experiments/reuse_window on a GPU.
//
// Prints CSV: window,blocks_per_sm,staged_ms,direct_ms,staged_over_direct (the staged
// kernel's speed over the direct one's),right (both sums checked).
#include "cml/errors.hpp"
#include "cml/stream.hpp"
#include "cml/timing.hpp"
#include "cml/tile_sum.cuh"

#include <cuda_pipeline.h>

#include <algorithm>
#include <cstdio>
#include <vector>

using cml::tile_sum::Word;

namespace {

// Both kernels of a configuration alternate, after a warm-up: medians of 7.
constexpr cml::TimingOptions kTiming{2, 7};

constexpr int kThreads = 256, kTile = 1024, kMaxWindow = 64;

// Output i (i < n) is in[i] + in[i + 1] + ... + in[i + W - 1], the array followed by zeros;
// each thread computes outputs t, t + 256, t + 512, t + 768 of every tile of its block.
template <int W>
__global__ void __launch_bounds__(kThreads) staged(const Word* __restrict__ in, std::size_t n, Word* partial) {
  __shared__ alignas(16) Word s[kTile + kMaxWindow];
  const std::size_t tiles = (n + kTile - 1) / kTile;
  Word acc = 0;
  for (std::size_t t = blockIdx.x; t < tiles; t += gridDim.x) {
    const Word* src = in + t * kTile;  // the allocation holds n + kMaxWindow words, zeros past n
    for (int p = threadIdx.x; p < (kTile + ((W + 2) / 4) * 4 + 4) / 4 && 4 * p < kTile + kMaxWindow; p += kThreads)
      __pipeline_memcpy_async(s + 4 * p, src + 4 * p, 16);
    __pipeline_commit();
    __pipeline_wait_prior(0);
    __syncthreads();
#pragma unroll
    for (int k = 0; k < kTile / kThreads; ++k) {
      const int i = threadIdx.x + k * kThreads;
      if (t * kTile + i < n) {
#pragma unroll
        for (int j = 0; j < W; ++j) acc += s[i + j];
      }
    }
    __syncthreads();
  }
  cml::tile_sum::finish_block(acc, partial);
}

template <int W>
__global__ void __launch_bounds__(kThreads) direct(const Word* __restrict__ in, std::size_t n, Word* partial) {
  const std::size_t tiles = (n + kTile - 1) / kTile;
  Word acc = 0;
  for (std::size_t t = blockIdx.x; t < tiles; t += gridDim.x) {
#pragma unroll
    for (int k = 0; k < kTile / kThreads; ++k) {
      const std::size_t i = t * kTile + threadIdx.x + k * kThreads;
      if (i < n) {
#pragma unroll
        for (int j = 0; j < W; ++j) acc += __ldg(in + i + j);
      }
    }
  }
  cml::tile_sum::finish_block(acc, partial);
}

template <int W>
void measure(const Word* d, std::size_t n, Word* partial, const std::vector<Word>& prefix, int sms,
             cudaStream_t stream) {
  Word want = 0;
  for (std::size_t i = 0; i < n; ++i) want += prefix[std::min(i + W, n)] - prefix[i];
  for (const int per_sm : {2, 4, 8}) {
    const int blocks = per_sm * sms;
    const auto sum_of = [&] {
      std::vector<Word> got(static_cast<std::size_t>(blocks));
      CUDA_CHECK(cudaMemcpy(got.data(), partial, got.size() * 4, cudaMemcpyDeviceToHost));
      Word s = 0;
      for (Word g : got) s += g;
      return s;
    };
    const cml::Work a = [&](cudaStream_t s) {
      staged<W><<<blocks, kThreads, 0, s>>>(d, n, partial);
      CUDA_CHECK_LAUNCH();
    };
    const cml::Work b = [&](cudaStream_t s) {
      direct<W><<<blocks, kThreads, 0, s>>>(d, n, partial);
      CUDA_CHECK_LAUNCH();
    };
    a(stream);
    CUDA_CHECK(cudaStreamSynchronize(stream));
    const bool right_a = sum_of() == want;
    b(stream);
    CUDA_CHECK(cudaStreamSynchronize(stream));
    const bool right_b = sum_of() == want;
    const auto st = cml::time_interleaved({a, b}, stream, kTiming);
    const double ma = st[0].median_ms, mb = st[1].median_ms;
    std::printf("%d,%d,%.4f,%.4f,%.3f,%d\n", W, per_sm, ma, mb, mb / ma, right_a && right_b ? 1 : 0);
    std::fflush(stdout);
  }
}

}  // namespace

int main() {
  int sms = 0;
  CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
  const std::size_t n = std::size_t{1} << 28;  // 1 GiB
  std::vector<Word> host(n + kMaxWindow, 0u);
  std::vector<Word> prefix(n + 1, 0u);
  for (std::size_t i = 0; i < n; ++i) {
    host[i] = cml::tile_sum::word_at(i);
    prefix[i + 1] = prefix[i] + host[i];
  }
  Word* d = nullptr;
  Word* partial = nullptr;
  CUDA_CHECK(cudaMalloc(&d, host.size() * 4));
  CUDA_CHECK(cudaMalloc(&partial, 4096 * 4));
  cml::upload(d, host.data(), host.size());
  const cml::Stream stream;
  std::printf("window,blocks_per_sm,staged_ms,direct_ms,staged_over_direct,right\n");
  measure<1>(d, n, partial, prefix, sms, stream);
  measure<2>(d, n, partial, prefix, sms, stream);
  measure<4>(d, n, partial, prefix, sms, stream);
  measure<8>(d, n, partial, prefix, sms, stream);
  measure<16>(d, n, partial, prefix, sms, stream);
  measure<32>(d, n, partial, prefix, sms, stream);
  measure<64>(d, n, partial, prefix, sms, stream);
  CUDA_CHECK(cudaFree(d));
  CUDA_CHECK(cudaFree(partial));
  return 0;
}
