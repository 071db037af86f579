// The tiled sum that chapters 07 and 08 both run, declared once: each chapter's kernels
// move the same array through shared memory their own way (07: the CUDA C++ APIs, 08:
// cp.async in PTX, bulk copies, TMA) and are timed against the same two provided kernels,
// register staging and a read-only ceiling. Host-compatible: the programs and the tests
// include it; the device helpers at the end are for nvcc only.
//
// The computation: `in` holds n 32-bit words, cut into tiles of kTileWords (4 KiB; the last
// tile may be shorter). Tile t belongs to block t % job.blocks. Each block copies each of
// its tiles into shared memory and computes on it there: every word w of the tile adds
// work(w, job.compute) to the block's sum (unsigned, modulo 2^32, so any order gives the
// same bits). Block b writes its sum to job.partial[b] (0 when it has no tile). Every
// kernel runs job.blocks blocks of kThreads threads.
#pragma once

#include "buffers.hpp"
#include "errors.hpp"
#include "verify.hpp"

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#if defined(__CUDACC__)
#define CML_TILE_HD __host__ __device__
#else
#define CML_TILE_HD
#endif

namespace cml::tile_sum {

using Word = std::uint32_t;

inline constexpr int kThreads = 256;     // threads per block, every kernel
inline constexpr int kTileWords = 1024;  // words per tile: 4 KiB, 4 per thread
inline constexpr int kTileBytes = kTileWords * static_cast<int>(sizeof(Word));
inline constexpr int kMaxStages = 4;  // the deepest pipeline of either chapter

// `compute` dependent multiply-adds (a linear congruential step: IMAD in SASS) on one
// word: the knob that moves a kernel from copy-bound (0) to compute-bound (64 and more).
CML_TILE_HD inline Word work(Word w, int compute) {
  for (int k = 0; k < compute; ++k) w = w * 1664525u + 1013904223u;
  return w;
}

struct Job {
  const Word* in = nullptr;  // n words, from cudaMalloc (16-byte aligned)
  std::size_t n = 0;
  Word* partial = nullptr;  // blocks words: one sum per block
  int blocks = 1;           // the grid: >= 1
  int compute = 0;          // work() per word: >= 0
  int stages = 1;           // pipelines: tiles in flight per block, 1..kMaxStages
};

CML_TILE_HD inline std::size_t tile_count(std::size_t n) { return (n + kTileWords - 1) / kTileWords; }

// The ceiling every variant is measured against: a plain vectorised read-only kernel
// (16-byte loads through the read-only path, two tiles in flight per thread) that computes
// the same sums straight from registers, no shared memory: what reading the array can
// reach. Kernel name: cml::tile_sum::sum_read_only_kernel.
void sum_read_only(const Job& job, cudaStream_t stream);

// ---- What the programs and the tests check the sums with (host) ------------------------

// j with the fields every job of chapters 07 and 08 has, Job and a matrix job alike: where
// the sums go, the grid, the work per word, the stages.
template <class JobT>
JobT with_grid(JobT j, Word* partial, int blocks, int compute, int stages) {
  j.partial = partial;
  j.blocks = blocks;
  j.compute = compute;
  j.stages = stages;
  return j;
}

// A job over `n` words of `in`, its sums into `partial`.
inline Job make_job(const Word* in, std::size_t n, Word* partial, int blocks, int compute, int stages) {
  Job j;
  j.in = in;
  j.n = n;
  return with_grid(j, partial, blocks, compute, stages);
}

// The columns of a variant table, over a chapter's own job type: --variant's name, what it
// is, its function and its kernel's name in SASS, the step that writes it (0: provided),
// and whether job.stages matters to it.
template <class JobT>
struct VariantColumns {
  const char* name;
  const char* what;
  void (*fn)(const JobT&, cudaStream_t);
  const char* kernel;
  int step;
  bool staged;
};

// The array: a hash of the index, so no two nearby words are equal and a word read from
// the wrong tile, the wrong stage or before it landed changes the sums.
inline Word word_at(std::size_t i) {
  std::uint64_t x = (static_cast<std::uint64_t>(i) + 0x9E3779B97F4A7C15ull) * 0xBF58476D1CE4E5B9ull;
  x ^= x >> 31;
  return static_cast<Word>(x ^ (x >> 29));
}
inline std::vector<Word> make_input(std::size_t n) {
  std::vector<Word> in(n);
  for (std::size_t i = 0; i < n; ++i) in[i] = word_at(i);
  return in;
}

// `host` in device memory of `words` words (>= host.size(); any beyond it unwritten).
inline DeviceBuffer<Word> to_device(const std::vector<Word>& host, std::size_t words) {
  DeviceBuffer<Word> d(words);
  upload(d.data(), host.data(), host.size());
  return d;
}

// The partial sums the computation promises: block b sums work(w, compute) over the words
// of tiles b, b + blocks, b + 2 blocks, ...
inline std::vector<Word> reference_partials(const std::vector<Word>& in, int blocks, int compute) {
  std::vector<Word> partial(static_cast<std::size_t>(blocks), 0u);
  for (std::size_t i = 0; i < in.size(); ++i)
    partial[(i / kTileWords) % static_cast<std::size_t>(blocks)] += work(in[i], compute);
  return partial;
}

// got against want; a mismatch names the block, how many tiles it had, and whether it is
// the block of the short last tile.
inline VerifyResult check_partials(const std::vector<Word>& got, const std::vector<Word>& want, std::size_t n) {
  auto v = compare_exact(got.data(), want.data(), got.size());
  if (!v.ok) {
    const std::size_t b = v.first_bad, blocks = got.size(), tiles = tile_count(n);
    const std::size_t mine = tiles > b ? (tiles - b + blocks - 1) / blocks : 0;
    const bool last = tiles > 0 && (tiles - 1) % blocks == b && n % kTileWords != 0;
    v.want += " (the sum of block " + std::to_string(b) + ", over its " + std::to_string(mine) + " tile(s)" +
              (last ? ", the short last tile among them" : "") + ")";
  }
  return v;
}

// The shapes of a check: n words (0, shorter than a tile, not multiples of 4, of the tile or
// of the stages' tile counts) on a grid of `blocks`, so that blocks own 0, 1 or many tiles.
struct Case {
  std::size_t n;
  int blocks;
  const char* what;
};
inline const std::vector<Case>& checked_cases() {
  static const std::vector<Case> c = {
      {0, 3, "empty"},
      {1, 1, "one word"},
      {1023, 2, "one short tile, n % 4 == 3"},
      {1025, 1, "a tile and a word"},
      {5 * kTileWords + 6, 2, "5 tiles + 6 words on 2 blocks"},
      {7 * kTileWords + 1, 3, "7 tiles + 1 word on 3 blocks"},
      {13 * kTileWords + 2, 2, "13 tiles + 2 words on 2 blocks (not a multiple of 2, 3 or 4 tiles each)"},
      {11 * kTileWords, 16, "11 tiles on 16 blocks (some with none)"},
      {(1u << 20) + 3, 37, "1 Mi words + 3 on 37 blocks"},
      {(5u << 20) + 1001, 264, "5 Mi words + 1001 on 264 blocks"},
  };
  return c;
}

}  // namespace cml::tile_sum

#if defined(__CUDACC__)
namespace cml::tile_sum {

// ---- What every kernel shares that is not the lesson (device) ---------------------------

// The words thread t computes on: the 16-byte piece of words 4u .. 4u + 3 with
// u = (t + kThreads / 2) % kThreads, half a block away. Whoever copies a tile (a 4-byte
// copy of words t, t + 256, ..., a 16-byte copy of words 4t .. 4t + 3, a bulk copy, a TMA
// box), thread t computes on words another thread (in another warp) or the TMA unit put
// there: as in a transpose, a stencil or a matrix tile, the consumer of a word is not its
// copier. So the whole tile must have arrived for every thread (a wait AND a block barrier)
// before any thread calls this, and every thread must be done before the tile is refilled.
__device__ __forceinline__ int compute_piece_of(int thread) { return (thread + kThreads / 2) % kThreads; }

// Adds work(w, compute) over this thread's piece of the tile to acc. `count` words of the
// tile are valid (kTileWords, or fewer in the last tile).
__device__ __forceinline__ Word compute_tile(const Word* tile, int count, int compute, Word acc) {
  const int first = 4 * compute_piece_of(static_cast<int>(threadIdx.x));
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

// Register staging, the body every starter kernel runs: each thread loads words of the
// tile into registers (coalesced: word threadIdx.x + 256 k), stores them into the tile,
// and the block waits at a barrier before computing; a second barrier keeps the next
// tile's stores off words still being read. The loads of one tile are all issued before
// the first store, but nothing of the next tile is in flight while the block computes.
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

}  // namespace cml::tile_sum
#endif
