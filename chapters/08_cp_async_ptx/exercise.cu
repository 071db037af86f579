// Chapter 08 — cp.async in PTX, bulk copies and the tensor memory accelerator. THE file
// you edit: five steps, TODO(1) to TODO(5). Everything works as shipped: the wrapper copies
// through registers and every kernel runs chapter 07's register-staged body, correct and
// synchronous. Keep the kernels' names: the tests find them by name in the compiled code.
//
//   ./lab run 08                         the tile copy, the experiment, every pipeline, timed
//   ./lab run 08 -- --mode=reverse       the source's experiment, and its wrong twin
//   ./lab check 08                       the chapter's tests: which steps pass, and why not
//   ./lab hint 08                        one more hint (chapters/08_cp_async_ptx/hints.md)
//
// What each function must do is in cp_async_ptx.cuh; the PTX wrappers you may call and the
// tile helpers (tile_span, compute_tile, finish_block, box_span, compute_box, for_stages,
// stage_bytes) are in device.cuh.
#include "cp_async_ptx.cuh"
#include "device.cuh"

#include "cml/errors.hpp"

#include <cstdint>
#include <stdexcept>
#include <string>

namespace ch08 {

// TODO(1): copy Bytes bytes from global memory at `src` straight into shared memory at
// `dst`, asynchronously, with no register in between: one PTX cp.async, allocating in L1
// and L2 for Cache::ca, in L2 only for Cache::cg. Only the first src_bytes bytes
// (0..Bytes) are read from `src`; the rest of the Bytes land as zeros. The instruction wants
// addresses of its state spaces, not C++'s generic pointers. A size the instruction does
// not take (.ca: 4, 8, 16; .cg: 16 only) must fail to compile HERE, with a message saying
// so — not later, in ptxas, on a line of a temporary .ptx file. The tile copy and the
// experiment below call it; steps 2-4 will too.
template <int Bytes, Cache C>
__device__ __forceinline__ void cp_async(void* dst, const void* src, int src_bytes = Bytes) {
  // As shipped: an ordinary copy, byte by byte through a register — right, synchronous,
  // and not the lesson.
  auto* to = static_cast<unsigned char*>(dst);
  const auto* from = static_cast<const unsigned char*>(src);
  for (int i = 0; i < Bytes; ++i) to[i] = i < src_bytes ? from[i] : 0;
}

// ---- What your wrapper is used for (provided: read it, keep it) -------------------------------

// The tile copy: each thread copies pieces of Bytes of the tile (thread t: pieces t,
// t + 256, ...), waits for its own copies, and the block barrier makes every thread's pieces
// visible to all: the words each thread writes out below were copied by other threads.
// The piece in which the array ends copies what is left of it; pieces past the end copy
// nothing (src-size 0, pointed at the tile's first word, which exists): both zero-fill.
template <int Bytes, Cache C>
__device__ __forceinline__ void copy_tiles_body(const Word* in, std::size_t n, Word* out) {
  __shared__ alignas(16) Word tile[kTileWords];
  constexpr int kPieces = kTileBytes / Bytes;
  const std::size_t tiles = tile_count(n), n_bytes = n * sizeof(Word);
  const char* const src = reinterpret_cast<const char*>(in);
  for (std::size_t t = blockIdx.x; t < tiles; t += gridDim.x) {
    for (int p = static_cast<int>(threadIdx.x); p < kPieces; p += kThreads) {
      const std::size_t at = t * kTileBytes + static_cast<std::size_t>(p) * Bytes;  // the piece's first byte in `in`
      const int left = at >= n_bytes                                    ? 0
                       : n_bytes - at < static_cast<std::size_t>(Bytes) ? static_cast<int>(n_bytes - at)
                                                                        : Bytes;
      cp_async<Bytes, C>(reinterpret_cast<char*>(tile) + p * Bytes, src + (left > 0 ? at : t * kTileBytes), left);
    }
    cp_async_wait_all();  // this thread's pieces have landed...
    __syncthreads();      // ...and, after the barrier, every thread's
#pragma unroll
    for (int k = 0; k < kTileWords / kThreads; ++k) {
      const int i = static_cast<int>(threadIdx.x) + k * kThreads;
      out[t * kTileWords + i] = tile[i];
    }
    __syncthreads();  // the next tile's copies must not overwrite words still being read
  }
}

__global__ void __launch_bounds__(kThreads) copy_tiles_ca4_kernel(const Word* in, std::size_t n, Word* out) {
  copy_tiles_body<4, Cache::ca>(in, n, out);
}
__global__ void __launch_bounds__(kThreads) copy_tiles_ca8_kernel(const Word* in, std::size_t n, Word* out) {
  copy_tiles_body<8, Cache::ca>(in, n, out);
}
__global__ void __launch_bounds__(kThreads) copy_tiles_ca16_kernel(const Word* in, std::size_t n, Word* out) {
  copy_tiles_body<16, Cache::ca>(in, n, out);
}
__global__ void __launch_bounds__(kThreads) copy_tiles_cg16_kernel(const Word* in, std::size_t n, Word* out) {
  copy_tiles_body<16, Cache::cg>(in, n, out);
}

// Launches the kernel of one width and cache level (cp_async_ptx.cuh).
void copy_tiles(int bytes, Cache cache, const Word* in, std::size_t n, Word* out, int blocks, cudaStream_t stream) {
  if (cache == Cache::ca && bytes == 4)
    copy_tiles_ca4_kernel<<<blocks, kThreads, 0, stream>>>(in, n, out);
  else if (cache == Cache::ca && bytes == 8)
    copy_tiles_ca8_kernel<<<blocks, kThreads, 0, stream>>>(in, n, out);
  else if (cache == Cache::ca && bytes == 16)
    copy_tiles_ca16_kernel<<<blocks, kThreads, 0, stream>>>(in, n, out);
  else if (cache == Cache::cg && bytes == 16)
    copy_tiles_cg16_kernel<<<blocks, kThreads, 0, stream>>>(in, n, out);
  else
    throw std::invalid_argument("copy_tiles: no " + std::string(cache == Cache::cg ? "cp.async.cg" : "cp.async.ca") +
                                " copy of " + std::to_string(bytes) + " bytes (.ca: 4, 8, 16; .cg: 16)");
  CUDA_CHECK_LAUNCH();
}

// The experiment of the source notes: a global -> shared copy with no register in between,
// then a read of shared memory. cp.async.wait_all covers the calling thread's own copies
// only: reading back what this thread copied needs nothing more, reading what another
// thread copied needs a barrier after everyone's wait (__syncthreads; __syncwarp would do
// within one warp). The neighbour is 32 threads away, in the other warp.
__global__ void reverse_kernel(const int* a, int* b, Reverse how) {
  __shared__ int element[64];
  const int t = static_cast<int>(threadIdx.x), threads = static_cast<int>(blockDim.x);
  cp_async<4, Cache::ca>(&element[t], &a[threads - 1 - t]);
  cp_async_wait_all();
  if (how == Reverse::neighbour_synced) __syncthreads();
  b[t] = element[how == Reverse::own ? t : (t + 32) % threads];
}

// One block of `threads` (32 or 64; a neighbour needs 64) threads.
void reverse_warp(Reverse how, const int* a, int* b, int threads, cudaStream_t stream) {
  if (threads != 32 && threads != 64) throw std::invalid_argument("reverse_warp: threads must be 32 or 64");
  if (how != Reverse::own && threads != 64)
    throw std::invalid_argument("reverse_warp: a neighbour 32 threads away needs 64 threads");
  reverse_kernel<<<1, threads, 0, stream>>>(a, b, how);
  CUDA_CHECK_LAUNCH();
}

// TODO(2): chapter 07's multi-stage pipeline with your step-1 copy, its completion tracked
// per thread, one group of copies per stage: job.stages buffers of one tile in dynamic
// shared memory (sized by the launcher), and while the block computes on its k-th tile, the
// copies of its tiles k + 1 .. k + Stages - 1 are in flight. Each thread copies its words
// of a tile with 4-byte copies cached in L1 (thread t: words t, t + 256, ...). Constraints:
// a thread reads a tile only when it has landed — its own copies AND the other threads'; a
// buffer is refilled only after every thread has finished reading it; the wait must let
// exactly the copies that are not needed yet stay in flight, no more and no fewer, for
// every Stages; any n, and tile counts that are not multiples of Stages.
template <int Stages>
__global__ void __launch_bounds__(kThreads) sum_pipeline_kernel(const Job job) {
  sum_through_registers(job);
}

void sum_pipeline(const Job& job, cudaStream_t stream) {
  for_stages(job.stages, "sum_pipeline", [&](auto s) {
    sum_pipeline_kernel<decltype(s)::value><<<job.blocks, kThreads, stage_bytes(job.stages), stream>>>(job);
  });
  CUDA_CHECK_LAUNCH();
}

// TODO(3): step 2's pipeline with one 16-byte copy per thread per tile that bypasses L1
// (thread t: words 4t .. 4t + 3; 256 threads x 16 bytes = the tile). The array's last tile
// may end inside a thread's 16 bytes, or before them: handle that without a branch to
// narrower copies and without reading past in[n - 1] — the words that do not exist land
// as zeros, by the copy itself. Constraints: as step 2's; SASS of this kernel shows one
// kind of copy only, LDGSTS.E.BYPASS.128 (with .ZFILL).
template <int Stages>
__global__ void __launch_bounds__(kThreads) sum_fast_kernel(const Job job) {
  sum_through_registers(job);
}

void sum_fast(const Job& job, cudaStream_t stream) {
  for_stages(job.stages, "sum_fast", [&](auto s) {
    sum_fast_kernel<decltype(s)::value><<<job.blocks, kThreads, stage_bytes(job.stages), stream>>>(job);
  });
  CUDA_CHECK_LAUNCH();
}

// TODO(4): (sm_90) the same pipeline where ONE thread moves each tile with one bulk copy
// into shared memory, completing on an mbarrier of its stage, and every thread waits for
// the stage's phase with device.cuh's wait_phase (pass it job.report) before computing.
// Constraints: a barrier is initialised by one thread, and made visible to the asynchronous
// proxy (the path the bulk copy's writes take) and to the other threads before anyone uses
// it; a phase completes when its arrivals are made and the bytes it expects have landed —
// expect exactly the bytes the copy delivers; the k-th use of a barrier waits for the phase
// of that use, whose parity changes from one use to the next; bulk copies move multiples of
// 16 bytes between 16-byte aligned addresses, so where the array ends inside a 16-byte
// piece, its last words need another path — and must have landed before the phase publishes
// the tile.
template <int Stages>
__global__ void __launch_bounds__(kThreads) sum_bulk_kernel(const Job job) {
  sum_through_registers(job);
}

void sum_bulk(const Job& job, cudaStream_t stream) {
  for_stages(job.stages, "sum_bulk", [&](auto s) {
    sum_bulk_kernel<decltype(s)::value><<<job.blocks, kThreads, stage_bytes(job.stages), stream>>>(job);
  });
  CUDA_CHECK_LAUNCH();
}

// TODO(5): (sm_90) your plan for the tensor-map pipeline: how many rows each box has (the
// bytes one barrier wait brings) and how many stages the speed test runs it with, at 4
// blocks per SM. Constraint: the read-only kernel streams the same matrix at close to the
// memory's speed; reach 0.9 of it. Each box costs its block a fixed time in its loop, and
// each stage holds a box of the SM's shared memory: measure (./lab run 08 -- --mode=tma)
// rather than guess. Every stage count 1..kMaxStages must still launch.
TmaPlan tma_plan() { return {4, 3}; }

// TODO(5): the tensor map of a matrix: the descriptor from which the TMA unit finds a
// box's rows (cp_async_ptx.cuh: tensor_map_for). Encoded by the driver's encoder, reached
// through the runtime (the course links the runtime only: no -lcuda); a matrix TMA
// cannot take is refused here with std::invalid_argument and the rule it breaks, before the
// driver sees it. As shipped: an all-zero map, which the starter's kernel never reads.
CUtensorMap tensor_map_for([[maybe_unused]] const Matrix& m, [[maybe_unused]] int box_rows) { return CUtensorMap{}; }

// TODO(5): the same pipeline as step 4 over the boxes of a matrix (device.cuh: box_span,
// compute_box), each box one 2D load by the tensor memory accelerator through `map`,
// completing on the stage's mbarrier. Boxes at the right and bottom edges stick out of the
// matrix: let the TMA unit handle that (what it reads, what it writes, and how many
// bytes it reports), and count only the words inside. Constraints: as step 4's; the map is
// a kernel parameter the TMA unit reads from where it lies; a stage holds a whole box,
// and if your stages need more than 48 KiB of dynamic shared memory, the kernel must be
// allowed it before its launch.
template <int Stages>
__global__ void __launch_bounds__(kThreads)
    sum_tma_kernel([[maybe_unused]] const __grid_constant__ CUtensorMap map, const MatrixJob job, int box_rows) {
  sum_boxes_through_registers(job, box_rows);
}

void sum_tma(const MatrixJob& job, cudaStream_t stream) {
  const int box_rows = tma_plan().box_rows;
  const CUtensorMap map = tensor_map_for(job.in, box_rows);
  for_stages(job.stages, "sum_tma", [&](auto s) {
    sum_tma_kernel<decltype(s)::value><<<job.blocks, kThreads, 0, stream>>>(map, job, box_rows);
  });
  CUDA_CHECK_LAUNCH();
}

}  // namespace ch08
