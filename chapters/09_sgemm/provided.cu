// Chapter 09 — what the chapter provides: the code you read and keep, in three parts.
//
//   Part 1, the shape checks every function makes before it enqueues anything, and step
//     5's check of the GPU.
//   Part 2, the two ends of the scale: sgemm_naive, the starting point every step is
//     measured from, and cuBLAS, the ceiling every step is a fraction of (FP32 only:
//     CUBLAS_PEDANTIC_MATH, no TF32), called on the chapter's row-major views.
//   Part 3, the roofline's ceilings measured on this GPU: a kernel of independent FFMA
//     chains (the FP32 peak) and a device-to-device copy (the DRAM bandwidth); and the
//     shared-memory scrub the checks run before every launch.
#include "harness.hpp"
#include "sgemm.cuh"

#include "cml/device.hpp"
#include "cml/driver.hpp"
#include "cml/errors.hpp"
#include "cml/needs.hpp"
#include "cml/scrub.hpp"

#include <cublas_v2.h>

#include <algorithm>
#include <cstdio>
#include <map>
#include <mutex>
#include <stdexcept>
#include <string>
#include <utility>

namespace ch09 {

// =========================================================================================
// Part 1 — the shape checks
// =========================================================================================

namespace {

std::string dims(const char* name, int rows, int cols, int ld) {
  return std::string(name) + " is " + std::to_string(rows) + " x " + std::to_string(cols) + " (ld " +
         std::to_string(ld) + ")";
}

// One view: no negative size, ld >= cols and a multiple of 4 (every row on 16 bytes), data
// unless the view is empty.
void check_view(const char* function, const char* name, const float* data, int rows, int cols, int ld) {
  const auto bad = [&](const std::string& why) {
    return std::invalid_argument(std::string(function) + ": " + dims(name, rows, cols, ld) + ": " + why);
  };
  if (rows < 0 || cols < 0) throw bad("a size is negative");
  if (ld < cols) throw bad("its ld is below its columns (a row would overlap the next)");
  if (ld % 4 != 0) throw bad("its ld is not a multiple of 4 (its rows would not all start on 16 bytes)");
  if (data == nullptr && rows > 0 && cols > 0) throw bad("its data is null");
}

void check_equal(const char* function, const std::string& what, int x, int y, const std::string& views) {
  if (x != y)
    throw std::invalid_argument(std::string(function) + ": " + what + " (" + std::to_string(x) +
                                " != " + std::to_string(y) + "): " + views);
}

// C = A B, or with `b_transposed` C = A Bᵀ (B given n x k): the views, then the shapes.
void check_product_shapes(const char* function, ConstView a, ConstView b, View c, bool b_transposed) {
  check_view(function, "A", a.data, a.rows, a.cols, a.ld);
  check_view(function, "B", b.data, b.rows, b.cols, b.ld);
  check_view(function, "C", c.data, c.rows, c.cols, c.ld);
  const std::string views =
      dims("A", a.rows, a.cols, a.ld) + ", " + dims("B", b.rows, b.cols, b.ld) + ", " + dims("C", c.rows, c.cols, c.ld);
  const int b_k = b_transposed ? b.cols : b.rows, b_n = b_transposed ? b.rows : b.cols;
  check_equal(
      function,
      b_transposed ? "A's columns must equal B's columns (k; B is given n x k)" : "A's columns must equal B's rows (k)",
      a.cols, b_k, views);
  check_equal(function, "C's rows must equal A's rows (m)", c.rows, a.rows, views);
  check_equal(function, b_transposed ? "C's columns must equal B's rows (n)" : "C's columns must equal B's columns (n)",
              c.cols, b_n, views);
}

}  // namespace

void check_gemm_shapes(const char* function, ConstView a, ConstView b, View c) {
  check_product_shapes(function, a, b, c, false);
}

// Read once per device: the launcher calls it every time, and reading a device's facts
// (cudaGetDeviceProperties) takes longer than a launch. Measured on the H100 at 4096^3:
// read at each call, step 6 ran at 0.74 of cuBLAS, the host falling behind the GPU.
void require_tma(const char* function) {
  static std::mutex lock;
  static std::map<int, std::string> missing;  // device -> why step 6 cannot run ("" when it can)
  int device = 0;
  CUDA_CHECK(cudaGetDevice(&device));
  std::string why;
  {
    const std::lock_guard<std::mutex> hold(lock);
    auto it = missing.find(device);
    if (it == missing.end())
      it = missing.emplace(device, cml::needs::missing_for("09", 6, cml::read_capabilities(device))).first;
    why = it->second;
  }
  if (!why.empty()) throw cml::Skip(std::string(function) + ": " + why);
}

PFN_cuTensorMapEncodeTiled_v12000 tensor_map_encoder(const char* function) {
  static const auto fn = cml::driver_function<PFN_cuTensorMapEncodeTiled_v12000>("cuTensorMapEncodeTiled", 12000);
  if (fn == nullptr)
    throw std::runtime_error(std::string(function) +
                             ": the driver has no cuTensorMapEncodeTiled (TMA needs a CUDA 12.0 driver or newer)");
  return fn;
}

void check_gram_shapes(const char* function, ConstView a, View c) {
  check_view(function, "A", a.data, a.rows, a.cols, a.ld);
  check_view(function, "C", c.data, c.rows, c.cols, c.ld);
  const std::string views = dims("A", a.rows, a.cols, a.ld) + ", " + dims("C", c.rows, c.cols, c.ld);
  check_equal(function, "C's rows must equal A's rows (m)", c.rows, a.rows, views);
  check_equal(function, "C's columns must equal A's rows (C = A A^T is m x m)", c.cols, a.rows, views);
}

// =========================================================================================
// Part 2 — the starting point and the ceiling
// =========================================================================================

namespace {

constexpr int kNaiveBlock = 16;  // 16 x 16 threads, one per element of C
constexpr int kMaxGridY = 65535;

// Thread (x, y) of the block computes C(row, col) for col = its x (a warp: 16 consecutive
// columns of two rows), reading row `row` of A (the same float for the 16 lanes of a row:
// a broadcast) and column `col` of B (16 consecutive floats: coalesced), k times, from
// global memory. Nothing is reused on chip except by the caches: 2 loads per FMA.
__global__ void __launch_bounds__(kNaiveBlock* kNaiveBlock) sgemm_naive_kernel(ConstView a, ConstView b, View c) {
  const int col = static_cast<int>(blockIdx.x) * kNaiveBlock + static_cast<int>(threadIdx.x);
  if (col >= c.cols) return;
  const float* __restrict__ bp = b.data;
  float* __restrict__ cp = c.data;
  // Rows in steps of the grid's height: m may need more blocks than a grid has rows.
  for (int row = static_cast<int>(blockIdx.y) * kNaiveBlock + static_cast<int>(threadIdx.y); row < c.rows;
       row += static_cast<int>(gridDim.y) * kNaiveBlock) {
    const float* __restrict__ ar = a.data + static_cast<std::size_t>(row) * a.ld;
    float acc = 0.0f;  // k = 0: C(row, col) = 0
    for (int p = 0; p < a.cols; ++p) acc = fmaf(ar[p], bp[static_cast<std::size_t>(p) * b.ld + col], acc);
    cp[static_cast<std::size_t>(row) * c.ld + col] = acc;
  }
}

}  // namespace

void sgemm_naive(ConstView a, ConstView b, View c, cudaStream_t stream) {
  check_gemm_shapes("sgemm_naive", a, b, c);
  if (c.rows == 0 || c.cols == 0) return;
  const dim3 grid(static_cast<unsigned>((c.cols + kNaiveBlock - 1) / kNaiveBlock),
                  static_cast<unsigned>(std::min((c.rows + kNaiveBlock - 1) / kNaiveBlock, kMaxGridY)));
  sgemm_naive_kernel<<<grid, dim3(kNaiveBlock, kNaiveBlock), 0, stream>>>(a, b, c);
  CUDA_CHECK_LAUNCH();
}

// ---- cuBLAS --------------------------------------------------------------------------------
//
// cuBLAS is column-major: it reads a matrix of r rows and c columns with leading dimension
// ld as element (i, j) at data[i + j * ld]. Our row-major m x n matrix with leading
// dimension ld, element (r, c) at data[r * ld + c], is therefore, to cuBLAS, the n x m
// matrix Cᵀ, unchanged in memory. So rather than transposing anything we ask for the
// transpose of the product:
//     C = A B    <=>    Cᵀ = Bᵀ Aᵀ
// where cuBLAS already sees Bᵀ (n x k, ld = B's ld), Aᵀ (k x m, ld = A's ld) and Cᵀ (n x m,
// ld = C's ld): cublasSgemm(N, N, n, m, k, 1, B, ldb, A, lda, 0, C, ldc).
// With b_transposed, B is given as n x k and C = A Bᵀ, so Cᵀ = B Aᵀ; cuBLAS sees B's memory
// as Bᵀ (k x n), hence op = T on it: cublasSgemm(T, N, n, m, k, 1, B, ldb, A, lda, 0, C, ldc).

namespace {

// A cuBLAS status as an exception naming the call, the status and what cuBLAS says of it.
void check_cublas(cublasStatus_t status, const char* call) {
  if (status != CUBLAS_STATUS_SUCCESS)
    throw std::runtime_error(std::string("cuBLAS: ") + call + " failed: " + cublasGetStatusName(status) + " (" +
                             cublasGetStatusString(status) + ")");
}

cublasHandle_t as_handle(void* h) { return static_cast<cublasHandle_t>(h); }

// The workspace cuBLAS may use, given to it so that a call never allocates: 32 MiB, what
// the cuBLAS documentation (cublasSetWorkspace) recommends for Hopper (4 MiB elsewhere).
constexpr std::size_t kWorkspaceBytes = 32u << 20;

// The workspaces, by handle: one allocation per Cublas object (sgemm.cuh keeps the class's
// members to the handle alone). A map's entries stay where they are while others come and
// go; the mutex lets each thread keep its own Cublas.
struct Workspace {
  void* data = nullptr;
  cudaStream_t stream = nullptr;  // the stream cuBLAS was last given
};
std::mutex workspaces_mutex;
std::map<cublasHandle_t, Workspace>& workspaces() {
  static std::map<cublasHandle_t, Workspace> w;
  return w;
}
Workspace& workspace_of(cublasHandle_t h) {
  const std::lock_guard<std::mutex> lock(workspaces_mutex);
  const auto it = workspaces().find(h);
  if (it == workspaces().end()) throw std::logic_error("Cublas: a handle without its workspace");
  return it->second;
}
// Frees the workspace of `h` (none: nothing to do); returns cudaFree's answer.
cudaError_t free_workspace(cublasHandle_t h) {
  const std::lock_guard<std::mutex> lock(workspaces_mutex);
  const auto it = workspaces().find(h);
  if (it == workspaces().end()) return cudaSuccess;
  const cudaError_t e = cudaFree(it->second.data);
  workspaces().erase(it);
  return e;
}

}  // namespace

Cublas::Cublas(bool pedantic) {
  cublasHandle_t h = nullptr;
  check_cublas(cublasCreate(&h), "cublasCreate");
  handle_ = h;
  try {
    // FP32 only: no TF32 tensor cores nor any other reduced-precision path.
    if (pedantic) check_cublas(cublasSetMathMode(h, CUBLAS_PEDANTIC_MATH), "cublasSetMathMode(CUBLAS_PEDANTIC_MATH)");
    void* data = nullptr;
    CUDA_CHECK(cudaMalloc(&data, kWorkspaceBytes));
    {
      const std::lock_guard<std::mutex> lock(workspaces_mutex);
      workspaces()[h] = Workspace{data, nullptr};
    }
    check_cublas(cublasSetStream(h, nullptr), "cublasSetStream");
    check_cublas(cublasSetWorkspace(h, data, kWorkspaceBytes), "cublasSetWorkspace");
  } catch (...) {
    free_workspace(h);
    cublasDestroy(h);
    throw;
  }
}

Cublas::~Cublas() {
  cml::release_noexcept(
      [&] {
        const cublasHandle_t h = as_handle(handle_);
        check_cublas(cublasDestroy(h), "cublasDestroy");
        CUDA_CHECK(free_workspace(h));
      },
      "destroying the cuBLAS handle");
}

const char* Cublas::math_mode() { return "FP32, pedantic: no TF32"; }

void Cublas::sgemm(ConstView a, ConstView b, View c, cudaStream_t stream, bool b_transposed) {
  const char* function = b_transposed ? "Cublas::sgemm (b_transposed)" : "Cublas::sgemm";
  check_product_shapes(function, a, b, c, b_transposed);
  const int m = c.rows, n = c.cols, k = a.cols;
  if (m == 0 || n == 0) return;
  if (k == 0) {
    // C = zeros. cuBLAS would write them too (beta = 0), but it refuses a leading
    // dimension below 1, which the views of an m x 0 matrix may have: say it plainly.
    CUDA_CHECK(cudaMemset2DAsync(c.data, static_cast<std::size_t>(c.ld) * sizeof(float), 0,
                                 static_cast<std::size_t>(n) * sizeof(float), static_cast<std::size_t>(m), stream));
    return;
  }
  const cublasHandle_t h = as_handle(handle_);
  Workspace& w = workspace_of(h);
  if (w.stream != stream) {
    check_cublas(cublasSetStream(h, stream), "cublasSetStream");
    // cublasSetStream puts the handle back on cuBLAS's own workspace pool: ours again.
    check_cublas(cublasSetWorkspace(h, w.data, kWorkspaceBytes), "cublasSetWorkspace");
    w.stream = stream;
  }
  const float one = 1.0f, zero = 0.0f;
  check_cublas(cublasSgemm(h, b_transposed ? CUBLAS_OP_T : CUBLAS_OP_N, CUBLAS_OP_N, n, m, k, &one, b.data, b.ld,
                           a.data, a.ld, &zero, c.data, c.ld),
               "cublasSgemm");
}

// =========================================================================================
// Part 3 — the roofline's ceilings, and the scrub
// =========================================================================================

namespace {

// kFmaChains independent accumulators per thread: while one chain waits the FFMA latency
// (about 4 cycles), the others issue, and 8 resident warps per scheduler hide the rest.
// x = x * mul + add converges to add / (1 - mul): no overflow, no subnormals. mul and add
// come from the host, so the compiler can fold nothing.
__global__ void __launch_bounds__(kFmaThreads)
    fma_peak_kernel(float* __restrict__ out, int iterations, float mul, float add) {
  const int t = static_cast<int>(blockIdx.x) * kFmaThreads + static_cast<int>(threadIdx.x);
  float x[kFmaChains];
#pragma unroll
  for (int j = 0; j < kFmaChains; ++j) x[j] = static_cast<float>(t % 1024) * 1e-3f + static_cast<float>(j);
  for (int i = 0; i < iterations; ++i) {
#pragma unroll
    for (int u = 0; u < kFmaUnroll; ++u) {
#pragma unroll
      for (int j = 0; j < kFmaChains; ++j) x[j] = fmaf(x[j], mul, add);
    }
  }
  float sum = 0.0f;
#pragma unroll
  for (int j = 0; j < kFmaChains; ++j) sum += x[j];
  out[t] = sum;  // written: the chains are not dead code
}

// Slice b of the grid reads floats [b * per_block, (b + 1) * per_block) of `in` `passes`
// times, 16 bytes a thread a load, consecutive threads on consecutive pieces (coalesced).
__global__ void __launch_bounds__(kReadThreads)
    l2_read_kernel(const float4* __restrict__ in, std::size_t pieces, int passes, float* __restrict__ out) {
  const std::size_t per_block = pieces / gridDim.x, first = per_block * blockIdx.x;
  float sum = 0.0f;
  for (int p = 0; p < passes; ++p)
    for (std::size_t i = threadIdx.x; i < per_block; i += kReadThreads) {
      const float4 v = __ldcg(in + first + i);  // through L2, not L1: the L2's bandwidth
      sum += v.x + v.y + v.z + v.w;
    }
  out[blockIdx.x * kReadThreads + threadIdx.x] = sum;
}

// 1024 float4 = 16 KiB of shared memory, read at (i + thread) mod 1024 for run-time i: a warp
// reads 32 consecutive pieces (no conflict), and the compiler cannot hoist the loads.
constexpr int kSharedPieces = 1024;
__global__ void __launch_bounds__(kReadThreads) shared_read_kernel(int iterations, float* __restrict__ out) {
  __shared__ float4 tile[kSharedPieces];
  for (int i = static_cast<int>(threadIdx.x); i < kSharedPieces; i += kReadThreads)
    tile[i] = make_float4(static_cast<float>(i), 1.0f, 2.0f, 3.0f);
  __syncthreads();
  float4 acc = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
  for (int it = 0; it < iterations; ++it) {
#pragma unroll
    for (int u = 0; u < kSharedUnroll; ++u) {
      const float4 v = tile[(it * kSharedUnroll * 32 + u * 32 + static_cast<int>(threadIdx.x)) & (kSharedPieces - 1)];
      acc.x += v.x, acc.y += v.y, acc.z += v.z, acc.w += v.w;
    }
  }
  out[blockIdx.x * kReadThreads + threadIdx.x] = acc.x + acc.y + acc.z + acc.w;
}

}  // namespace

double l2_read(const float* in, std::size_t count, int passes, float* out, int blocks, cudaStream_t stream) {
  const std::size_t pieces = count / 4;
  if (blocks <= 0 || passes <= 0 || pieces < static_cast<std::size_t>(blocks))
    throw std::invalid_argument("l2_read: blocks, passes and pieces per block must be positive");
  l2_read_kernel<<<blocks, kReadThreads, 0, stream>>>(reinterpret_cast<const float4*>(in), pieces, passes, out);
  CUDA_CHECK_LAUNCH();
  return 16.0 * static_cast<double>(pieces / blocks * blocks) * passes;
}

double shared_read(int blocks, int iterations, float* out, cudaStream_t stream) {
  if (blocks <= 0 || iterations <= 0)
    throw std::invalid_argument("shared_read: blocks and iterations must be positive");
  shared_read_kernel<<<blocks, kReadThreads, 0, stream>>>(iterations, out);
  CUDA_CHECK_LAUNCH();
  return 16.0 * kSharedUnroll * static_cast<double>(iterations) * kReadThreads * blocks;
}

double fma_peak(float* out, int blocks, int iterations, cudaStream_t stream) {
  if (blocks <= 0 || iterations <= 0)
    throw std::invalid_argument("fma_peak: blocks and iterations must be positive (" + std::to_string(blocks) + ", " +
                                std::to_string(iterations) + ")");
  fma_peak_kernel<<<blocks, kFmaThreads, 0, stream>>>(out, iterations, 0.999f, 1e-3f);
  CUDA_CHECK_LAUNCH();
  return fma_peak_flops(blocks, iterations);
}

void device_copy(const float* in, float* out, std::size_t count, cudaStream_t stream) {
  if (count == 0) return;
  CUDA_CHECK(cudaMemcpyAsync(out, in, count * sizeof(float), cudaMemcpyDeviceToDevice, stream));
}

// NaN over every SM's shared memory (cml/scrub.hpp): a tile read before it was filled adds NaN.
void scrub_shared_memory(cudaStream_t stream) { cml::scrub_shared_memory(stream, kInputPoison); }

}  // namespace ch09
