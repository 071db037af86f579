// See cml/tile_sum.cuh: the read-only ceiling both chapters time their kernels against.
#include "cml/tile_sum.cuh"

namespace cml::tile_sum {

// Each thread reads the 16-byte piece 4t .. 4t + 3 of its block's tiles (LDG.E.128 through
// the read-only path: `in` is const __restrict__), two tiles per round so that two loads
// per thread are in flight, and computes on registers. No shared memory, no barrier: what
// moving the array through the SMs can reach.
__global__ void __launch_bounds__(kThreads)
    sum_read_only_kernel(const Word* __restrict__ in, std::size_t n, Word* __restrict__ partial, int compute) {
  const std::size_t tiles = tile_count(n);
  const std::size_t full = n / kTileWords;  // tiles with all kTileWords words
  const int first = 4 * static_cast<int>(threadIdx.x);
  Word acc = 0;
  std::size_t t = blockIdx.x;
  for (; t + gridDim.x < full; t += 2 * static_cast<std::size_t>(gridDim.x)) {
    const uint4 a = __ldg(reinterpret_cast<const uint4*>(in + t * kTileWords + first));
    const uint4 b = __ldg(reinterpret_cast<const uint4*>(in + (t + gridDim.x) * kTileWords + first));
    acc += work(a.x, compute) + work(a.y, compute) + work(a.z, compute) + work(a.w, compute);
    acc += work(b.x, compute) + work(b.y, compute) + work(b.z, compute) + work(b.w, compute);
  }
  for (; t < tiles; t += gridDim.x) {
    const std::size_t base = t * kTileWords;
    const std::size_t left = n - base;
    const int count = left < static_cast<std::size_t>(kTileWords) ? static_cast<int>(left) : kTileWords;
    if (first + 4 <= count) {
      const uint4 a = __ldg(reinterpret_cast<const uint4*>(in + base + first));
      acc += work(a.x, compute) + work(a.y, compute) + work(a.z, compute) + work(a.w, compute);
    } else {
      for (int i = first; i < count; ++i) acc += work(__ldg(in + base + i), compute);
    }
  }
  finish_block(acc, partial);
}

void sum_read_only(const Job& job, cudaStream_t stream) {
  sum_read_only_kernel<<<job.blocks, kThreads, 0, stream>>>(job.in, job.n, job.partial, job.compute);
  CUDA_CHECK_LAUNCH();
}

}  // namespace cml::tile_sum
