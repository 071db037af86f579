// Chapter 07 — the device code every variant shares and that is not the lesson: the
// computation on a tile that is already in shared memory, the block's sum, and the
// register-staged body (variant a) that the starter's kernels run. Device code: included
// by exercise.cu and provided.cu (nvcc) only.
#pragma once

#include "memcpy_async.cuh"

namespace ch07 {

// Thread t computes on words 4t .. 4t + 3 of the tile: words that other threads (or the
// copy engine) put there, so the whole tile must have arrived before any thread calls
// this. `count` words of the tile are valid (kTileWords, or fewer in the last tile).
__device__ __forceinline__ Word compute_tile(const Word* tile, int count, int compute, Word acc) {
  const int first = 4 * static_cast<int>(threadIdx.x);
  if (first + 4 <= count) {
    const uint4 v = *reinterpret_cast<const uint4*>(tile + first);  // LDS.128: tiles are 16-byte aligned
    // Copy-bound (compute 0): no work loops at all. Their tests cost little, but in a loop
    // that moves 16 bytes per thread per tile every instruction shows in the bandwidth.
    if (compute == 0) return acc + v.x + v.y + v.z + v.w;
    acc += work(v.x, compute) + work(v.y, compute) + work(v.z, compute) + work(v.w, compute);
  } else {
    for (int i = first; i < count; ++i) acc += work(tile[i], compute);
  }
  return acc;
}

// The block's sum of every thread's `acc`, written by thread 0 to partial[blockIdx.x].
// Every thread of the block must call it (it has barriers).
__device__ __forceinline__ void finish_block(Word acc, Word* partial) {
  __shared__ Word warp_sums[kThreads / 32];
  for (int offset = 16; offset > 0; offset /= 2) acc += __shfl_down_sync(0xffffffffu, acc, offset);
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  __syncthreads();  // warp_sums may still be read by an earlier call (none today: cheap insurance)
  if (lane == 0) warp_sums[warp] = acc;
  __syncthreads();
  if (threadIdx.x == 0) {
    Word total = 0;
    for (int w = 0; w < kThreads / 32; ++w) total += warp_sums[w];
    partial[blockIdx.x] = total;
  }
}

// Words [first, first + count) of `in` belong to tile t of the job.
struct TileSpan {
  std::size_t first;
  int count;
};
__device__ __forceinline__ TileSpan tile_span(const Job& job, std::size_t t) {
  const std::size_t first = t * kTileWords;
  const std::size_t left = job.n - first;
  return {first, left < static_cast<std::size_t>(kTileWords) ? static_cast<int>(left) : kTileWords};
}

// Variant (a): each thread loads words of the tile into registers (coalesced: word
// threadIdx.x + 256 k), stores them into the tile, and the block waits at a barrier before
// computing; a second barrier keeps the next tile's stores off words still being read.
// The loads of one tile are all issued before the first store, but nothing of the next
// tile is in flight while the block computes.
__device__ __forceinline__ void sum_through_registers(const Job& job) {
  __shared__ alignas(16) Word tile[kTileWords];
  const std::size_t tiles = tile_count(job.n);
  Word acc = 0;
  for (std::size_t t = blockIdx.x; t < tiles; t += gridDim.x) {
    const TileSpan s = tile_span(job, t);
    Word v[kTileWords / kThreads];
#pragma unroll
    for (int k = 0; k < kTileWords / kThreads; ++k) {
      const int i = static_cast<int>(threadIdx.x) + k * kThreads;
      v[k] = i < s.count ? job.in[s.first + i] : 0u;
    }
#pragma unroll
    for (int k = 0; k < kTileWords / kThreads; ++k) tile[threadIdx.x + k * kThreads] = v[k];
    __syncthreads();
    acc = compute_tile(tile, s.count, job.compute, acc);
    __syncthreads();
  }
  finish_block(acc, job.partial);
}

}  // namespace ch07
