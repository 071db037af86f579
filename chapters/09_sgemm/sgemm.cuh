// Chapter 09 — a tiled SGEMM: the API that exercise.cu implements (the learner's part,
// steps 1-6) and what the program, the tests and the solution share. Host-compatible C++:
// main.cu and the tests include it too.
//
// The matrices are FP32 and row-major with a leading dimension: element (r, c) of a view is
// data[r * ld + c], ld >= cols and ld a multiple of 4, so that every row starts on 16
// bytes (what 16-byte loads, cp.async and TMA need; cudaMalloc'd data is 256-byte aligned).
// The pad columns between cols and ld are not part of the matrix: no function writes them,
// and what they hold must not change a result.
//
// Every function computes with fused multiply-adds in any order of summation (the tests
// allow FP32 rounding of a K-term sum, not a wrong term), writes exactly C's rows x cols
// elements, and only enqueues its kernel(s) on `stream`:
//   - shapes: A is m x k, B is k x n, C is m x n (for gram: A is m x k, C is m x m);
//     a mismatch, an ld below cols or not a multiple of 4 throws std::invalid_argument
//     before anything is enqueued;
//   - m or n of 0 enqueues nothing; k of 0 (and m, n > 0) writes zeros into C;
//   - A, B and C do not overlap; any m, n, k (none need be a multiple of a tile or of 4).
#pragma once

#include <cuda.h>          // CUtensorMap, for step 6
#include <cudaTypedefs.h>  // PFN_cuTensorMapEncodeTiled_v12000
#include <cuda_runtime_api.h>

#include <cstddef>

namespace ch09 {

// A read-only view of a matrix in device memory, and a writable one.
struct ConstView {
  const float* data = nullptr;
  int rows = 0, cols = 0, ld = 0;
};
struct View {
  float* data = nullptr;
  int rows = 0, cols = 0, ld = 0;
  operator ConstView() const { return {data, rows, cols, ld}; }
};

// ---- Step 1: C = A B through shared-memory tiles ---------------------------------------
// Each block computes a tile of C from tiles of A and B staged in shared memory; every
// global load of A and of B is coalesced (a warp's lanes read consecutive floats of one
// row), and each staged element is used by many threads. Kernel name: sgemm_tiled_kernel.
void sgemm_tiled(ConstView a, ConstView b, View c, cudaStream_t stream);

// ---- Step 2: C = A Aᵀ, the transposed operand kept conflict-free ------------------------
// The Gram matrix of A's rows: c(i, j) = sum over k of a(i, k) a(j, k), C is m x m. Both
// operands are rows of A, read coalesced along k; the one used as Aᵀ is read from shared
// memory across its rows, without bank conflicts (a pad or a swizzle: yours to choose).
// Kernel name: gram_tiled_kernel.
void gram_tiled(ConstView a, View c, cudaStream_t stream);

// ---- Step 3: register blocking ---------------------------------------------------------
// C = A B where each thread computes a micro-tile of C (several rows by several columns)
// held in registers, from fragments of A and B it loads from shared memory 16 bytes at a
// time (LDS.128); no local memory (no LDL/STL: nothing spills). The block and thread tiles
// are yours. Kernel name: sgemm_registers_kernel.
void sgemm_registers(ConstView a, ConstView b, View c, cudaStream_t stream);

// ---- Step 4: warp tiling ---------------------------------------------------------------
// Step 3's micro-tiles, with the threads of each warp arranged over a compact sub-tile of
// the block's C, so that a warp's fragment loads at one k cover few distinct words of A and
// of B and are free of bank conflicts (Nsight Compute's shared-load wavefronts per FFMA);
// 16-byte loads and no local memory as in step 3. Kernel name: sgemm_warp_tiled_kernel.
void sgemm_warp_tiled(ConstView a, ConstView b, View c, cudaStream_t stream);

// ---- Step 5: a multi-stage cp.async pipeline -------------------------------------------
// Step 4's computation fed by a pipeline of shared-memory stages filled with 16-byte
// cp.async.cg copies (LDGSTS.E.BYPASS.128), the ragged edges of A and B zero-filled by the
// copy itself, completion tracked with commit and wait groups; the tiles of the next
// stages are in flight while one stage is computed. Kernel name: sgemm_pipelined_kernel.
void sgemm_pipelined(ConstView a, ConstView b, View c, cudaStream_t stream);

// ---- Step 6 (compute capability 9.0): the tensor memory accelerator ---------------------
// Step 5 with the A and B tiles loaded by TMA (cp.async.bulk.tensor, UTMALDG in SASS) from
// tensor maps the learner encodes, each stage completing on an mbarrier (a "full" barrier
// per stage that the copies complete, an "empty" one the consumers release). Throws
// cml::Skip (exit 77) on a GPU below 9.0. Kernel name: sgemm_tma_kernel.
void sgemm_tma(ConstView a, ConstView b, View c, cudaStream_t stream);

// ---- Provided by the chapter (provided.cu) ----------------------------------------------

// One thread per element of C, each reading a row of A and a column of B from global
// memory: the starting point every step is measured against. Kernel: sgemm_naive_kernel.
void sgemm_naive(ConstView a, ConstView b, View c, cudaStream_t stream);

// cuBLAS SGEMM on the same row-major views, FP32 (TF32 and other reduced-precision paths
// off: CUBLAS_PEDANTIC_MATH), on `stream`: the ceiling every step is a fraction of. With
// `b_transposed`, B is given as the n x k matrix whose transpose is multiplied (C = A Bᵀ:
// the Gram matrix's ceiling is cublas(a, a, c, true)). A handle per object: create one per
// thread, reuse it (creating a handle costs milliseconds). Cublas(false) leaves cuBLAS's
// default math mode (--mode=ceiling compares the two).
class Cublas {
 public:
  explicit Cublas(bool pedantic = true);
  ~Cublas();
  Cublas(const Cublas&) = delete;
  Cublas& operator=(const Cublas&) = delete;
  void sgemm(ConstView a, ConstView b, View c, cudaStream_t stream, bool b_transposed = false);
  // What the default handle's math mode is, for the program's output ("pedantic FP32").
  static const char* math_mode();

 private:
  void* handle_ = nullptr;  // cublasHandle_t
};

// The shape checks every function makes before enqueueing anything (std::invalid_argument,
// naming the function and the mismatch).
void check_gemm_shapes(const char* function, ConstView a, ConstView b, View c);
void check_gram_shapes(const char* function, ConstView a, View c);

// What step 6 needs of the GPU (needs.txt at the repository's root: the tensor memory
// accelerator, compute capability 9.0): throws cml::Skip, saying what is missing, on the
// current device when it lacks it.
void require_tma(const char* function);

// Step 6's way to the driver's cuTensorMapEncodeTiled (chapter 08 taught the lookup: the
// course links the runtime only): the function with its CUDA 12.0 signature, looked up once.
// std::runtime_error, naming `function`, where the driver has none (a driver older than
// CUDA 12.0). Which map to encode (dimensions, strides, box, swizzle) is step 6's.
PFN_cuTensorMapEncodeTiled_v12000 tensor_map_encoder(const char* function);

}  // namespace ch09
