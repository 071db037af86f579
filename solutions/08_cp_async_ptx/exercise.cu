// Chapter 08 — cp.async in PTX, bulk copies and the tensor memory accelerator, solved. The
// same file as chapters/08_cp_async_ptx/exercise.cu with every TODO done; the comments say
// why.
//
//   ./lab run 08 --solution          the chapter's program with this file
//   ./lab diff 08                    your file against this one (spoils the chapter)
#include "cp_async_ptx.cuh"
#include "device.cuh"

#include "cml/errors.hpp"

#include <cuda.h>
#include <cudaTypedefs.h>  // PFN_cuTensorMapEncodeTiled_v12000

#include <cstdint>
#include <stdexcept>
#include <string>

// Marks this translation unit as the solution: the learner's tests fail when it is linked
// into the learner's build (an exercise.cu that includes or copies this file).
extern "C" const int cml_ch08_solution_tu = 1;

namespace ch08 {

// ---- Step 1: the wrapper ----------------------------------------------------------------------

// cp.async wants its destination in the .shared state space (a 32-bit address) and its
// source in .global: __cvta_generic_to_shared / _to_global turn C++'s generic pointers into
// those. The size is an immediate of the instruction ("n"), the cache level a different
// instruction, so both are template parameters, checked here: ptxas would otherwise refuse
// a .cg of 8 bytes on a line of a temporary .ptx file, far from the call. src_bytes goes to
// the src-size operand: the copy reads that many bytes and zero-fills the rest (SASS:
// .ZFILL). The "memory" clobber keeps the compiler from moving shared-memory accesses
// across the copy.
template <int Bytes, Cache C>
__device__ __forceinline__ void cp_async(void* dst, const void* src, int src_bytes = Bytes) {
  static_assert(C == Cache::cg ? Bytes == 16 : (Bytes == 4 || Bytes == 8 || Bytes == 16),
                "cp_async: cp.async.cg copies 16 bytes only; cp.async.ca copies 4, 8 or 16 bytes");
  const auto shared = static_cast<std::uint32_t>(__cvta_generic_to_shared(dst));
  const auto global = __cvta_generic_to_global(src);
  if constexpr (C == Cache::ca)
    asm volatile("cp.async.ca.shared.global [%0], [%1], %2, %3;\n" ::"r"(shared), "l"(global), "n"(Bytes),
                 "r"(src_bytes)
                 : "memory");
  else
    asm volatile("cp.async.cg.shared.global [%0], [%1], %2, %3;\n" ::"r"(shared), "l"(global), "n"(Bytes),
                 "r"(src_bytes)
                 : "memory");
}

// ---- What the wrapper is used for (provided: read it, keep it) --------------------------------

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

// ---- Steps 2 and 3: the pipeline on cp.async groups ----------------------------------------

// This thread's copies of a tile into `dst`. Step 2: word by word, 4-byte cp.async.ca
// (thread t: words t, t + 256, ...). Step 3: one 16-byte cp.async.cg of words 4t .. 4t + 3
// (256 threads x 16 bytes = the tile), its src-size the bytes that exist: where the array
// ends inside the piece the rest is zero-filled, and a piece wholly past the end (src-size 0,
// pointed at the tile's first word) reads nothing. Same instruction for every piece, no
// branch to narrower copies, nothing read past in[n - 1].
template <bool Fast>
__device__ __forceinline__ void copy_share(Word* dst, const Word* src, int count) {
  if constexpr (Fast) {
    const int first = 4 * static_cast<int>(threadIdx.x);
    const int left = 4 * (count - first);
    const int bytes = left <= 0 ? 0 : left < 16 ? left : 16;
    cp_async<16, Cache::cg>(dst + first, src + (bytes > 0 ? first : 0), bytes);
  } else if (count == kTileWords) {
    // A whole tile, the common case: a loop of known length, unrolled (no loop test per
    // word). Only the short last tile takes the loop bounded by `count`.
#pragma unroll
    for (int q = 0; q < kTileWords / kThreads; ++q) {
      const int i = static_cast<int>(threadIdx.x) + q * kThreads;
      cp_async<4, Cache::ca>(dst + i, src + i);
    }
  } else {
    for (int i = static_cast<int>(threadIdx.x); i < count; i += kThreads) cp_async<4, Cache::ca>(dst + i, src + i);
  }
}

// The stage after `slot`, wrapping at Stages. The k-th tile lives in stage k % Stages, but
// k is 64-bit and the loop moves 16 bytes per thread per tile, so every instruction in it
// shows in the bandwidth (chapter 07 measured 10-25 % for its run-time k % stages): two int
// counters that wrap give the same stages for a compare.
template <int Stages>
__device__ __forceinline__ int next_stage(int slot) {
  return slot + 1 == Stages ? 0 : slot + 1;
}

// Chapter 07's pipeline, its bookkeeping by hand. The k-th tile of this block goes to stage
// k % Stages, counted by `fill` (the next fetch's stage) and `use` (the next compute's).
// Every thread commits one group per tile slot, with or without copies in it (past the last
// tile), so the count of groups is the same in every thread and "all but the newest
// Stages - 1 groups have landed" (cp.async.wait_group Stages - 1) always means "tile k has
// landed": when the block waits for tile k it has committed tiles k .. k + Stages - 1.
// wait_group 0 there would be correct and overlap nothing; more than Stages - 1 would let
// the compute read a tile still in flight.
template <int Stages, bool Fast>
__device__ __forceinline__ void sum_pipelined(const Job& job) {
  extern __shared__ __align__(16) Word stage_buf[];  // Stages tiles
  const std::size_t tiles = tile_count(job.n);
  int fill = 0, use = 0;
  const auto fetch = [&](std::size_t k) {
    const std::size_t t = blockIdx.x + k * gridDim.x;
    if (t < tiles) {
      const TileSpan s = tile_span(job, t);
      copy_share<Fast>(stage_buf + fill * kTileWords, job.in + s.first, s.count);
    }
    fill = next_stage<Stages>(fill);
    // The commit count lives in the warp's scoreboard (LDGDEPBAR / DEPBAR SB0): commit with
    // the warp converged after the short tile's uneven loop, so it counts once for all lanes.
    __syncwarp();
    cp_async_commit();
  };
  for (int k = 0; k + 1 < Stages; ++k) fetch(k);
  Word acc = 0;
  for (std::size_t k = 0, t = blockIdx.x; t < tiles; ++k, t += gridDim.x) {
    fetch(k + Stages - 1);        // refills the stage tile k - 1 used: freed by the barrier that ended it
    cp_async_wait<Stages - 1>();  // this thread's copies of tile k have landed...
    __syncthreads();              // ...and every other thread's
    acc = compute_tile(stage_buf + use * kTileWords, tile_span(job, t).count, job.compute, acc);
    use = next_stage<Stages>(use);
    __syncthreads();  // every thread is done with the stage before it is refilled
  }
  finish_block(acc, job.partial);
}

template <int Stages>
__global__ void __launch_bounds__(kThreads) sum_pipeline_kernel(const Job job) {
  sum_pipelined<Stages, false>(job);
}

void sum_pipeline(const Job& job, cudaStream_t stream) {
  for_stages(job.stages, "sum_pipeline", [&](auto s) {
    sum_pipeline_kernel<decltype(s)::value><<<job.blocks, kThreads, stage_bytes(job.stages), stream>>>(job);
  });
  CUDA_CHECK_LAUNCH();
}

// ---- Step 3 ----------------------------------------------------------------------------------

template <int Stages>
__global__ void __launch_bounds__(kThreads) sum_fast_kernel(const Job job) {
  sum_pipelined<Stages, true>(job);
}

void sum_fast(const Job& job, cudaStream_t stream) {
  for_stages(job.stages, "sum_fast", [&](auto s) {
    sum_fast_kernel<decltype(s)::value><<<job.blocks, kThreads, stage_bytes(job.stages), stream>>>(job);
  });
  CUDA_CHECK_LAUNCH();
}

// ---- Steps 4 and 5: the pipeline on mbarriers --------------------------------------------------

// One mbarrier per stage, one arrival per phase (thread 0's, with the bytes the phase
// expects), so a phase ends when thread 0 has arrived AND the TMA unit has delivered
// those bytes. The barriers are initialised once by one thread; a proxy fence makes the
// inits visible to the asynchronous proxy (the path of TMA's accesses) and the __syncthreads to the
// other threads, before anyone uses them. The k-th tile of this block uses stage k % Stages
// for the (k / Stages)-th time: its phase has parity (k / Stages) & 1. Thread 0 refills a
// stage only after the barrier that ends the previous use of it.
//
// fetch(k, dst, bar) (thread 0 only) starts the block's k-th tile into `dst` on `bar`;
// compute(k, tile, acc) adds it to the sum once it has landed.
template <int Stages, int StageWords, class Fetch, class Compute>
__device__ __forceinline__ void mbarrier_pipeline(std::size_t tiles, Report* report, Fetch&& fetch, Compute&& compute,
                                                  Word* partial) {
  extern __shared__ __align__(128) Word landing[];  // Stages x StageWords; 128-byte aligned for TMA
  __shared__ std::uint64_t full[Stages];
  if (threadIdx.x == 0) {
    for (int s = 0; s < Stages; ++s) mbarrier_init(&full[s], 1);
    fence_proxy_async_shared();
  }
  __syncthreads();
  const auto start = [&](std::size_t k) {
    if (blockIdx.x + k * gridDim.x < tiles) fetch(k, landing + (k % Stages) * StageWords, &full[k % Stages]);
  };
  if (threadIdx.x == 0)
    for (int k = 0; k + 1 < Stages; ++k) start(k);
  Word acc = 0;
  for (std::size_t k = 0; blockIdx.x + k * gridDim.x < tiles; ++k) {
    if (threadIdx.x == 0) start(k + Stages - 1);
    wait_phase(&full[k % Stages], static_cast<unsigned>(k / Stages) & 1u, report, static_cast<int>(k % Stages));
    acc = compute(k, landing + (k % Stages) * StageWords, acc);
    __syncthreads();  // every thread is done with the stage before thread 0 refills it
  }
  finish_block(acc, partial);
}

// Step 4: each tile is one bulk copy of its whole 16-byte pieces (its bytes rounded down to
// a multiple of 16: the tile starts 16-byte aligned, at a multiple of 4 KiB of a cudaMalloc
// array) and the phase expects exactly those bytes. Only the array's last tile can end
// inside a piece: its last 1-3 words take step 3's path, one zero-filled cp.async that
// thread 0 waits for before its arrival publishes the tile (an arrive releases, the other
// threads' wait acquires).
template <int Stages>
__global__ void __launch_bounds__(kThreads) sum_bulk_kernel(const Job job) {
  const auto fetch = [&](std::size_t k, Word* dst, std::uint64_t* bar) {
    const TileSpan s = tile_span(job, blockIdx.x + k * gridDim.x);
    const unsigned bytes = static_cast<unsigned>(s.count) * sizeof(Word), whole = bytes & ~15u;
    if (whole < bytes) {
      cp_async<16, Cache::cg>(dst + whole / 4, job.in + s.first + whole / 4, static_cast<int>(bytes - whole));
      cp_async_wait_all();
    }
    mbarrier_arrive_expect_tx(bar, whole);
    if (whole > 0) bulk_copy_to_shared(dst, job.in + s.first, whole, bar);
  };
  const auto compute = [&](std::size_t k, const Word* tile, Word acc) {
    return compute_tile(tile, tile_span(job, blockIdx.x + k * gridDim.x).count, job.compute, acc);
  };
  mbarrier_pipeline<Stages, kTileWords>(tile_count(job.n), job.report, fetch, compute, job.partial);
}

void sum_bulk(const Job& job, cudaStream_t stream) {
  for_stages(job.stages, "sum_bulk", [&](auto s) {
    sum_bulk_kernel<decltype(s)::value><<<job.blocks, kThreads, stage_bytes(job.stages), stream>>>(job);
  });
  CUDA_CHECK_LAUNCH();
}

// ---- Step 5 ----------------------------------------------------------------------------------

// 16 rows of 1 KiB per box: 16 KiB per barrier wait. Each box costs its block a fixed time
// in the loop however many bytes it brings: 4 KiB boxes stay near 0.8 of the read-only
// kernel at 4 blocks per SM on the H200, 8 KiB and more reach 0.95 (docs/08_cp_async_ptx.md,
// "Bytes per wait").
// 3 stages x 16 KiB = 48 KiB per block, 4 blocks per SM in the SM's 228 KiB.
constexpr TmaPlan kPlan{16, 3};
constexpr int kPlanBoxWords = kPlan.box_rows * kBoxCols;
constexpr unsigned kPlanBoxBytes = kPlanBoxWords * sizeof(Word);

TmaPlan tma_plan() { return kPlan; }

namespace {

// The driver's cuTensorMapEncodeTiled with the signature of CUDA 12.0 (the version asked
// for: a later driver keeps serving it), looked up once. The runtime does not wrap it and
// the course links the runtime only, so it is reached through
// cudaGetDriverEntryPointByVersion (CUDA 13 deprecates the unversioned lookup).
PFN_cuTensorMapEncodeTiled_v12000 encode_tiled() {
  static const PFN_cuTensorMapEncodeTiled_v12000 fn = [] {
    void* p = nullptr;
    cudaDriverEntryPointQueryResult found{};
#if CUDART_VERSION >= 12050
    CUDA_CHECK(cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", &p, 12000, cudaEnableDefault, &found));
#else  // CUDA 12.0-12.4 have only the unversioned lookup (it serves the version of the headers: 12.x)
    CUDA_CHECK(cudaGetDriverEntryPoint("cuTensorMapEncodeTiled", &p, cudaEnableDefault, &found));
#endif
    if (found != cudaDriverEntryPointSuccess || p == nullptr)
      throw std::runtime_error("the driver has no cuTensorMapEncodeTiled (CUDA 12.0 or newer driver needed)");
    return reinterpret_cast<PFN_cuTensorMapEncodeTiled_v12000>(p);
  }();
  return fn;
}

}  // namespace

// The rules are checked here, each with its own message: the driver's refusal is one
// CUresult for all of them.
CUtensorMap tensor_map_for(const Matrix& m, int box_rows) {
  if (box_rows < 1 || box_rows > kMaxBoxRows)
    throw std::invalid_argument("tensor_map_for: boxes of " + std::to_string(box_rows) + " rows; TMA takes 1 to " +
                                std::to_string(kMaxBoxRows));
  CUtensorMap map{};
  if (m.rows == 0 || m.cols == 0) return map;
  const std::uint64_t stride = m.pitch * sizeof(Word);
  if (m.pitch < m.cols)
    throw std::invalid_argument("tensor_map_for: a pitch of " + std::to_string(m.pitch) +
                                " words is shorter than a row of " + std::to_string(m.cols));
  if (stride % 16 != 0)
    throw std::invalid_argument("tensor_map_for: rows " + std::to_string(stride) +
                                " bytes apart: TMA needs the row stride "
                                "to be a multiple of 16 bytes; allocate the matrix pitched (a pitch of " +
                                std::to_string((m.pitch + 3) / 4 * 4) + " words)");
  if (reinterpret_cast<std::uintptr_t>(m.data) % 16 != 0)
    throw std::invalid_argument("tensor_map_for: TMA needs the matrix to start at a 16-byte aligned address");
  if (m.rows >= (1ull << 32) || m.cols >= (1ull << 32) || stride >= (1ull << 40))
    throw std::invalid_argument("tensor_map_for: a dimension past 2^32 elements (or a stride past 2^40 bytes)");
  // Dimensions and box sizes innermost first: {columns, rows}; one stride, that of the rows
  // (the columns' is the element size).
  const cuuint64_t dims[2] = {m.cols, m.rows};
  const cuuint64_t strides[1] = {stride};
  const cuuint32_t box[2] = {kBoxCols, static_cast<cuuint32_t>(box_rows)};
  const cuuint32_t element_strides[2] = {1, 1};
  const CUresult r =
      encode_tiled()(&map, CU_TENSOR_MAP_DATA_TYPE_UINT32, 2, const_cast<Word*>(m.data), dims, strides, box,
                     element_strides, CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_NONE,
                     CU_TENSOR_MAP_L2_PROMOTION_L2_256B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);  // outside: zeros
  if (r != CUDA_SUCCESS)
    throw std::runtime_error("cuTensorMapEncodeTiled refused a " + std::to_string(m.rows) + " x " +
                             std::to_string(m.cols) + " matrix (pitch " + std::to_string(m.pitch) +
                             " words): CUresult " + std::to_string(static_cast<int>(r)));
  return map;
}

// Each box is one 2D tensor copy (TMA) at its first column and row (innermost coordinate
// first). The TMA unit reads only the words inside the matrix, fills the rest of the box
// with zeros and always completes the whole box's bytes, edge or not: the phase expects
// kPlanBoxBytes. The tensor map is a __grid_constant__ parameter: TMA reads it from the
// kernel's parameter space by its address.
template <int Stages>
__global__ void __launch_bounds__(kThreads)
    sum_tma_kernel(const __grid_constant__ CUtensorMap map, const MatrixJob job) {
  const auto fetch = [&](std::size_t k, Word* dst, std::uint64_t* bar) {
    const BoxSpan b = box_span(job.in, kPlan.box_rows, blockIdx.x + k * gridDim.x);
    mbarrier_arrive_expect_tx(bar, kPlanBoxBytes);
    tensor_load_2d(dst, &map, b.x, b.y, bar);
  };
  const auto compute = [&](std::size_t k, const Word* box, Word acc) {
    return compute_box(box, box_span(job.in, kPlan.box_rows, blockIdx.x + k * gridDim.x), job.compute, acc);
  };
  mbarrier_pipeline<Stages, kPlanBoxWords>(box_count(job.in, kPlan.box_rows), job.report, fetch, compute, job.partial);
}

// Past 48 KiB a block's dynamic shared memory must be asked for, per kernel (4 stages of
// 16 KiB: 64 KiB); set once per instantiation.
void sum_tma(const MatrixJob& job, cudaStream_t stream) {
  const CUtensorMap map = tensor_map_for(job.in, kPlan.box_rows);
  for_stages(job.stages, "sum_tma", [&](auto s) {
    constexpr int kStages = decltype(s)::value;
    constexpr int kBytes = kStages * static_cast<int>(kPlanBoxBytes);
    static const bool asked = [] {
      CUDA_CHECK(cudaFuncSetAttribute(sum_tma_kernel<kStages>, cudaFuncAttributeMaxDynamicSharedMemorySize, kBytes));
      return true;
    }();
    (void)asked;
    sum_tma_kernel<kStages><<<job.blocks, kThreads, kBytes, stream>>>(map, job);
  });
  CUDA_CHECK_LAUNCH();
}

}  // namespace ch08
