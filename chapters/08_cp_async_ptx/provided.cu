// Chapter 08 — what the chapter provides: register staging as a kernel of its own (what
// the pipelines are timed against); the tensor map of a matrix for step 5, encoded by the
// driver (the runtime does not wrap cuTensorMapEncodeTiled, and the course links the
// runtime only, so the driver function is reached through cudaGetDriverEntryPointByVersion
// — CUDA 13 deprecates the unversioned cudaGetDriverEntryPoint — and no -lcuda is needed);
// and the shared-memory scrub the checks run before each launch.
#include "device.cuh"

#include "cml/errors.hpp"

#include <cuda.h>
#include <cudaTypedefs.h>  // PFN_cuTensorMapEncodeTiled_v12000

#include <cstdint>
#include <stdexcept>
#include <string>
#include <utility>

namespace ch08 {

__global__ void __launch_bounds__(kThreads) sum_sync_kernel(const Job job) { sum_through_registers(job); }

void sum_sync(const Job& job, cudaStream_t stream) {
  sum_sync_kernel<<<job.blocks, kThreads, 0, stream>>>(job);
  CUDA_CHECK_LAUNCH();
}

namespace {

// The driver's cuTensorMapEncodeTiled with the signature of CUDA 12.0 (the version asked
// for: a later driver keeps serving it), looked up once.
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

CUtensorMap tensor_map_for(const Matrix& m) {
  CUtensorMap map{};
  if (m.rows == 0 || m.cols == 0) return map;
  const std::uint64_t stride = m.pitch * sizeof(Word);
  if (m.pitch < m.cols)
    throw std::invalid_argument("tensor_map_for: a pitch of " + std::to_string(m.pitch) + " words is shorter than a row of " +
                                std::to_string(m.cols));
  if (stride % 16 != 0)
    throw std::invalid_argument("tensor_map_for: rows " + std::to_string(stride) + " bytes apart: TMA needs the row stride "
                                "to be a multiple of 16 bytes; allocate the matrix pitched (a pitch of " +
                                std::to_string((m.pitch + 3) / 4 * 4) + " words)");
  if (reinterpret_cast<std::uintptr_t>(m.data) % 16 != 0)
    throw std::invalid_argument("tensor_map_for: TMA needs the matrix to start at a 16-byte aligned address");
  if (m.rows >= (1ull << 32) || m.cols >= (1ull << 32) || stride >= (1ull << 40))
    throw std::invalid_argument("tensor_map_for: a dimension past 2^32 elements (or a stride past 2^40 bytes)");
  // Dimensions and box sizes innermost first: {columns, rows}; one stride, that of the
  // rows (the columns' is the element size).
  const cuuint64_t dims[2] = {m.cols, m.rows};
  const cuuint64_t strides[1] = {stride};
  const cuuint32_t box[2] = {kBoxCols, kBoxRows};
  const cuuint32_t element_strides[2] = {1, 1};
  const CUresult r =
      encode_tiled()(&map, CU_TENSOR_MAP_DATA_TYPE_UINT32, 2, const_cast<Word*>(m.data), dims, strides, box,
                     element_strides, CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_NONE,
                     CU_TENSOR_MAP_L2_PROMOTION_L2_256B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);  // outside: zeros
  if (r != CUDA_SUCCESS)
    throw std::runtime_error("cuTensorMapEncodeTiled refused a " + std::to_string(m.rows) + " x " +
                             std::to_string(m.cols) + " matrix (pitch " + std::to_string(m.pitch) + " words): CUresult " +
                             std::to_string(static_cast<int>(r)));
  return map;
}

namespace {

// Every thread writes garbage over its share of the block's dynamic shared memory. Through
// a volatile pointer: stores nobody reads would otherwise be dropped.
__global__ void scrub_shared_kernel(int words) {
  extern __shared__ Word junk[];
  volatile Word* const v = junk;
  for (int i = static_cast<int>(threadIdx.x); i < words; i += static_cast<int>(blockDim.x)) v[i] = 0xBADC0FFEu ^ i;
}

}  // namespace

// Blocks as large as a block may be (the opt-in maximum), two per SM's worth. The scheduler
// promises no placement, so this does not guarantee that every SM gets one; in practice
// blocks of this size spread one or two per SM, and each covers all of its SM's shared
// memory but the 1 KiB reserved per block.
void scrub_shared_memory(cudaStream_t stream) {
  static const auto shape = [] {
    int device = 0, sms = 0, bytes = 0;
    CUDA_CHECK(cudaGetDevice(&device));
    CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device));
    CUDA_CHECK(cudaDeviceGetAttribute(&bytes, cudaDevAttrMaxSharedMemoryPerBlockOptin, device));
    CUDA_CHECK(cudaFuncSetAttribute(scrub_shared_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, bytes));
    return std::pair<int, int>(2 * sms, bytes);
  }();
  scrub_shared_kernel<<<shape.first, 1024, static_cast<std::size_t>(shape.second), stream>>>(
      shape.second / static_cast<int>(sizeof(Word)));
  CUDA_CHECK_LAUNCH();
}

}  // namespace ch08
