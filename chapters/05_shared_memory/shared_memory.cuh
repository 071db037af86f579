// Chapter 05 — shared memory: the API that exercise.cu implements (the learner's part,
// steps 1-4) and what the chapter provides for its experiments (provided.cu).
// main.cu, the tests and the solution all include this file.
//
// Every transpose takes a rows x cols matrix of floats, row-major (`in[r * cols + c]`), and
// writes its transpose, cols x rows, row-major: out[c * rows + r] = in[r * cols + c], for
// every r < rows and c < cols, any shape (square or not, multiples of the tile or not,
// more than 2^31 elements where memory holds them), and writes nothing else. in and out
// come from cudaMalloc and do not overlap. Each function only enqueues its kernel on
// `stream`; a rows or cols of 0 enqueues nothing.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>

namespace ch05 {

// The tile of steps 1-3: T x T floats, T = 32 as the starter launches it (tile_grid), moved
// by blocks of 32 x 8 threads: thread (tx, ty) stores tile[ty + 8k][tx + 32h] and loads
// tile[tx + 32h][ty + 8k], for k < T / 8 and h < T / 32 (for T = 32: rows ty, ty + 8,
// ty + 16, ty + 24, one float each). A larger T (64: 16 elements per thread) is allowed; it
// measured no faster on an H100 or H200 (docs/05_shared_memory.md, "Speed"). The program's
// bank model reads T and the pad from the kernel's static shared memory. One block moves one
// tile: steps 1-3 launch one block of 32 x 8 threads per T x T tile of the matrix,
// ceil(rows / T) * ceil(cols / T) blocks, T = 32 or 64, arranged as tile_grid does (2D) or
// in any other order (a 1D grid, say): no block without a tile, no tile without a block.
inline constexpr int kTile = 32;
inline constexpr int kBlockRows = 8;

// ---- Step 1: the tiled transpose ------------------------------------------------------
// Through a tile of shared memory (32 x 32 floats, or T x T as above): global reads coalesced (a warp reads 32
// consecutive floats of one row of `in`), global writes coalesced (a warp writes 32
// consecutive floats of one row of `out`), and a barrier between the two. Bank conflicts
// are allowed here. Kernel name: transpose_tiled_kernel.
void transpose_tiled(const float* in, float* out, int rows, int cols, cudaStream_t stream);

// ---- Step 2: no conflicts, by padding -------------------------------------------------
// Step 1's transpose whose shared-memory loads and stores have no bank conflict, by
// giving the tile's rows a pad. Kernel name: transpose_padded_kernel.
void transpose_padded(const float* in, float* out, int rows, int cols, cudaStream_t stream);

// ---- Step 3: no conflicts, by a swizzle -----------------------------------------------
// The same without a pad: the tile is exactly T x T floats (32 x 32: 4096 bytes of static
// shared memory; 64 x 64: 16384), and a permutation of the column index (XOR) keeps the
// banks apart. Kernel name: transpose_swizzled_kernel.
void transpose_swizzled(const float* in, float* out, int rows, int cols, cudaStream_t stream);

// ---- Step 4: 16 bytes per access ------------------------------------------------------
// For rows and cols multiples of 4 (std::invalid_argument otherwise): every global and
// every shared-memory access of the kernel moves 16 bytes (LDG.E.128, STG.E.128, LDS.128,
// STS.128 in SASS), and the shared-memory accesses have no bank conflict. The tile's shape
// and the block's shape are yours. Kernel name: transpose_wide_kernel.
void transpose_wide(const float* in, float* out, int rows, int cols, cudaStream_t stream);

// ---- Provided by the chapter (provided.cu) --------------------------------------------

// The ceilings and the first attempt, on the same grid of 32 x 32 tiles, 32 x 8 threads:
//   copy_tiles: out[r * cols + c] = in[r * cols + c], coalesced both ways (what a
//               transpose could reach: the same bytes, no shared memory);
//   transpose_naive: the transpose read along rows, written along columns.
void copy_tiles(const float* in, float* out, int rows, int cols, cudaStream_t stream);
void transpose_naive(const float* in, float* out, int rows, int cols, cudaStream_t stream);

// A padded transpose (step 2's tile with 8 more rows) whose warps write whole 32-byte
// sectors of `out` on every shape, also when rows is not a multiple of 8 floats: what it
// takes at 8191 x 8191 (provided.cu, part 2; docs/05_shared_memory.md, "Whole sectors:
// transpose_aligned").
void transpose_aligned(const float* in, float* out, int rows, int cols, cudaStream_t stream);

// The grid of 32 x 32 tiles over a rows x cols matrix (x along cols), 32 x 8 threads. Any
// order of tiles is correct; which blocks run together decides how DRAM sees the writes
// (docs/05_shared_memory.md, "Speed": the solution numbers them down the columns).
dim3 tile_grid(int rows, int cols);

// One access-width experiment: a single warp reads (or writes) shared memory once, lane l
// at element element[l] of an array of `width`-byte elements (4: float, 8: float2, 16:
// float4), lanes outside `active` idle. A load experiment's kernel stores the shared array
// with conflict-free 4-byte stores first, then makes the one load under test and uses every
// component of what it loaded (otherwise nvcc splits a float4 load into scalar ones); a
// store experiment makes the one store under test, then reads back with 4-byte loads. So
// the load counters of a load experiment, and the store counters of a store experiment,
// count the access under test alone. Kernels: shared_load_experiment, shared_store_experiment.
// `element` is in device memory (32 values); `sink` receives 32 floats.
inline constexpr unsigned kExperimentBytes = 8192;  // the shared array's size
void run_experiment(bool store, unsigned width, const unsigned* element, unsigned active, float* sink,
                    cudaStream_t stream);

}  // namespace ch05
