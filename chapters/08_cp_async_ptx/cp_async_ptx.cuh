// Chapter 08 — cp.async in PTX, and Hopper's bulk copies: the API that exercise.cu
// implements (the learner's part, steps 1-5) and what the program, the tests and the
// solution share. Host-compatible C++: main.cu and the tests include it too.
//
// The sums of steps 2-4 are the tiled sum of cml/tile_sum.cuh, chapter 07's computation:
// `in` holds n 32-bit words cut into tiles of kTileWords (4 KiB, the last one shorter);
// tile t belongs to block t % blocks, which copies it into shared memory and adds
// work(w, compute) for each of its words to its sum, written to partial[b] (0 for a block
// with no tile). So the two chapters' kernels run the same work and their times and SASS
// compare line by line. Step 5 does the same over a 2D matrix cut into boxes (below).
//
// Every function launches job.blocks blocks of kThreads threads and only enqueues that one
// kernel on `stream` (for n == 0 too). None reads past in[n - 1]; a copy of 0 bytes (a
// piece wholly past the end, zero-filled) still takes its source address inside the array. Steps 4 and 5 need compute
// capability 9.0: their kernels are built for every target, but the callers check the GPU before launching them.
#pragma once

#include "cml/tile_sum.cuh"

#include <cuda.h>  // CUtensorMap
#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

#if defined(__CUDACC__)
#define CH08_HD __host__ __device__
#else
#define CH08_HD
#endif

namespace ch08 {

using cml::tile_sum::kMaxStages;  // 4: the deepest pipeline
using cml::tile_sum::kThreads;    // 256 threads per block, every kernel
using cml::tile_sum::kTileBytes;  // 4 KiB per tile
using cml::tile_sum::kTileWords;  // 1024 words per tile
using cml::tile_sum::tile_count;
using cml::tile_sum::Word;
using cml::tile_sum::work;

// The cache level an asynchronous copy allocates in: PTX's cp.async.ca ("cache at all
// levels": L1 and L2; 4, 8 or 16 bytes) or cp.async.cg ("cache global": L2 only,
// bypassing L1; 16 bytes only).
enum class Cache { ca, cg };

// What a kernel that waits on an mbarrier reports when a wait gives up (device.cuh's
// wait_phase): the phase never completed within the time limit. Device memory, zeroed by
// the caller before the launch; read back after it. A null Report* in a job means "no
// report": a wait that gives up then prints its reason and traps.
struct Report {
  unsigned int stalled = 0;  // 1: some wait gave up (the fields below: the first one)
  unsigned int block = 0, thread = 0;
  unsigned int stage = 0, parity = 0;  // the stage's barrier and the parity it waited for
  unsigned long long waited_ns = 0;
  unsigned long long limit_ns = 0;  // set by the host: how long a wait may take (0: 4 s)
};

// The tiled sum's job, plus where a waiting kernel reports (steps 4 and 5; null for steps 2
// and 3, which wait on cp.async groups, not on an mbarrier). The workload's provided
// kernels (the read-only ceiling) take it as their own Job.
struct Job : cml::tile_sum::Job {
  Report* report = nullptr;
};

// ---- Step 1: the cp.async wrapper (exercise.cu) and what uses it ------------------------
//
// The wrapper itself is device code (exercise.cu, cp_async<Bytes, C>). The chapter uses it
// in two provided kernels, whose launchers are these:

// A tile copy through shared memory: `out` gets in[0..n) and then zeros up to the end of
// the last tile (out holds tile_count(n) * kTileWords words). Each thread copies pieces of
// `bytes` (4, 8 or 16; 16 only for Cache::cg) with one asynchronous copy each; the piece
// in which the array ends copies only what is left of it and zero-fills the rest, and the
// pieces past the end copy nothing and zero-fill all (cp.async's src-size operand). Kernels:
// copy_tiles_ca4_kernel, copy_tiles_ca8_kernel, copy_tiles_ca16_kernel, copy_tiles_cg16_kernel.
// std::invalid_argument for a width/cache pair that has no kernel.
void copy_tiles(int bytes, Cache cache, const Word* in, std::size_t n, Word* out, int blocks, cudaStream_t stream);

// The experiment of the source notes, for one block of `threads` threads (32 or 64):
// thread t copies a[threads - 1 - t] into shared element t with one asynchronous copy,
// waits for its own copies, and then writes b[t]:
//   own                 b[t] = shared[t]: what the thread itself copied — no barrier needed;
//   neighbour_synced    b[t] = shared[(t + 32) % threads] after a __syncthreads: another
//                       warp's element, made visible by the barrier;
//   neighbour_racy      the same read with no barrier: wrong (a race: racecheck is the tool
//                       that looks for it), shown only so the program can demonstrate it.
//                       Kernel: reverse_kernel.
enum class Reverse { own, neighbour_synced, neighbour_racy };
void reverse_warp(Reverse how, const int* a, int* b, int threads, cudaStream_t stream);

// ---- Step 2: a multi-stage pipeline on cp.async groups -----------------------------------
// job.stages (1..kMaxStages; std::invalid_argument otherwise) tiles in flight per block,
// each thread copying its words (4-byte cp.async.ca, thread t: words t, t + 256, ...),
// one commit group per stage. Chapter 07's sum_pipeline in PTX. SASS: LDGSTS.E, LDGDEPBAR,
// DEPBAR.LE SB0, stages - 1. Kernel: sum_pipeline_kernel<Stages>.
void sum_pipeline(const Job& job, cudaStream_t stream);

// ---- Step 3: 16-byte copies past L1, the tail zero-filled --------------------------------
// Step 2's pipeline whose copies are 16-byte cp.async.cg (thread t: words 4t .. 4t + 3),
// for any n: where the array ends inside a 16-byte piece, the copy reads only the words
// that exist and zero-fills the rest (src-size), with no narrower copy and no read past
// in[n - 1]. SASS: LDGSTS.E.BYPASS.128(.ZFILL) only. Kernel: sum_fast_kernel<Stages>.
void sum_fast(const Job& job, cudaStream_t stream);

// ---- Step 4 (sm_90): one bulk copy per tile, completing on an mbarrier --------------------
// The same pipeline where one thread moves each tile with one cp.async.bulk into shared
// memory, completing on the stage's mbarrier (expected bytes: what is copied), and every
// thread waits for the stage's phase with device.cuh's wait_phase (reporting to job.report).
// Bulk copies move multiples of 16 bytes from 16-byte aligned addresses: the array's last
// 1-3 words take another path. SASS: UBLKCP.S.G, SYNCS. Kernel: sum_bulk_kernel<Stages>.
void sum_bulk(const Job& job, cudaStream_t stream);

// ---- Step 5 (sm_90): 2D boxes through the tensor memory accelerator ----------------------

// A box is kBoxCols = 256 words wide (1 KiB rows; a TMA box has at most 256 elements per
// dimension) and as many rows high as your plan says: one box is what one barrier wait
// brings into a stage.
inline constexpr int kBoxCols = 256;
inline constexpr int kMaxBoxRows = 256;

// Your choice for step 5 (exercise.cu's tma_plan): the box's rows (1..kMaxBoxRows) and the
// stages (1..kMaxStages) the speed test runs sum_tma with, at 4 blocks per SM (--mode=tma
// times every stage count and marks the plan's).
// sum_tma must still be right at every stage count 1..kMaxStages with that box.
struct TmaPlan {
  int box_rows;
  int stages;
};
TmaPlan tma_plan();

// A rows x cols matrix of words in device memory, row r at data + r * pitch (pitch in
// words, >= cols). A tensor map needs the row stride to be a multiple of 16 bytes: a row
// of 8191 words is not, so such a matrix is allocated pitched (pitch 8192).
struct Matrix {
  const Word* data = nullptr;
  std::size_t rows = 0, cols = 0, pitch = 0;
};

// The boxes of a matrix, box_rows rows high: box_columns(m) across, box_bands(m, box_rows)
// down; box t is at box column t % box_columns(m), band t / box_columns(m), and belongs to
// block t % blocks. Boxes at the right and bottom edges stick out of the matrix: only
// their words inside it count.
CH08_HD inline std::size_t box_columns(const Matrix& m) { return (m.cols + kBoxCols - 1) / kBoxCols; }
CH08_HD inline std::size_t box_bands(const Matrix& m, int box_rows) {
  return (m.rows + static_cast<std::size_t>(box_rows) - 1) / static_cast<std::size_t>(box_rows);
}
CH08_HD inline std::size_t box_count(const Matrix& m, int box_rows) {
  return m.rows == 0 || m.cols == 0 ? 0 : box_columns(m) * box_bands(m, box_rows);
}

struct MatrixJob {
  Matrix in;
  Word* partial = nullptr;  // blocks words: block b's sum of work(w, compute) over its boxes' words
  int blocks = 1;
  int compute = 0;
  int stages = 1;            // 1..kMaxStages
  Report* report = nullptr;  // as in Job
};

// The tensor map of a matrix (yours, step 5): 32-bit words, 2 dimensions {cols, rows}, the
// rows' stride pitch * 4 bytes, boxes of kBoxCols x box_rows, no swizzle, and words outside
// the matrix filled with zeros; encoded by the driver's cuTensorMapEncodeTiled, reached
// through the runtime. std::invalid_argument when the matrix breaks a TMA rule (a row
// stride that is not a multiple of 16 bytes: allocate it pitched; data not 16-byte
// aligned; a dimension past 2^32) or box_rows is outside 1..kMaxBoxRows; an empty matrix
// gets an all-zero map (no box is ever loaded from it). std::runtime_error when the driver
// refuses.
CUtensorMap tensor_map_for(const Matrix& m, int box_rows);

// Block b's sum over the words of boxes b, b + blocks, ... (tma_plan().box_rows rows high)
// that lie inside the matrix, pipelined like step 4 at job.stages, each box one 2D TMA load
// through the tensor map, completing on the stage's mbarrier. Out-of-bounds words land as
// zeros. Only enqueues. SASS: UTMALDG.2D, SYNCS. Kernel: sum_tma_kernel<Stages>.
void sum_tma(const MatrixJob& job, cudaStream_t stream);

// ---- Provided (provided.cu) --------------------------------------------------------------

// Register staging, the starting point of steps 2-4 (each thread loads its words into
// registers, stores them to the tile, barrier, compute), as one kernel: what the pipelines
// are timed against. Kernel: sum_sync_kernel.
void sum_sync(const Job& job, cudaStream_t stream);

// The ceiling every pipeline is measured against (cml/tile_sum.cuh): a plain vectorised
// read-only kernel over the same array, the same sums straight from registers.
inline void sum_read_only(const Job& job, cudaStream_t stream) { cml::tile_sum::sum_read_only(job, stream); }

// Fills the SMs' shared memory with garbage (as many as a grid of two blocks per SM
// reaches: the scheduler does not promise every one). Shared memory keeps its contents from one
// kernel to the next, so a kernel that reads a word before its copy landed may find the
// right word there, left by the previous run of the same job: the tests and --mode=check
// run this before each checked launch, so such a read finds garbage instead.
void scrub_shared_memory(cudaStream_t stream);

}  // namespace ch08
