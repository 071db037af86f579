// Chapter 01 — the code the chapter provides, to read and keep: the unpack and sum kernels,
// and the baselines step 2 is measured against (one copy per piece, cudaMemcpyBatchAsync).
// Built into the program and the tests alike. The learner does not edit this file.
#include "transfers.cuh"

#include "cml/device.hpp"
#include "cml/errors.hpp"

#include <cuda_runtime_api.h>  // CUDART_VERSION

#include <cstdint>
#include <vector>

namespace ch01 {

namespace {

// One block per piece (grid-stride over pieces): consecutive threads move consecutive
// 16-byte words when the piece and both ends allow it, else bytes.
__global__ void unpack_kernel(const std::byte* __restrict__ packed, std::size_t count, std::size_t piece_bytes,
                              std::byte* __restrict__ base, const std::size_t* __restrict__ offsets) {
  for (std::size_t p = blockIdx.x; p < count; p += gridDim.x) {
    const std::byte* src = packed + p * piece_bytes;
    std::byte* dst = base + offsets[p];
    const bool wide = piece_bytes % 16 == 0 && reinterpret_cast<std::uintptr_t>(src) % 16 == 0 &&
                      reinterpret_cast<std::uintptr_t>(dst) % 16 == 0;
    if (wide) {
      const uint4* s = reinterpret_cast<const uint4*>(src);
      uint4* d = reinterpret_cast<uint4*>(dst);
      for (std::size_t i = threadIdx.x; i < piece_bytes / 16; i += blockDim.x) d[i] = s[i];
    } else {
      for (std::size_t i = threadIdx.x; i < piece_bytes; i += blockDim.x) dst[i] = src[i];
    }
  }
}

// Each thread adds a grid-stride share of the words; a warp shuffle reduces them and lane
// 0 adds the warp's total with one atomic. Integer sums are exact in any order.
__global__ void sum_kernel(const std::uint32_t* __restrict__ words, std::size_t n, std::size_t stride,
                           unsigned long long* sum) {
  unsigned long long local = 0;
  const std::size_t count = (n + stride - 1) / stride;
  const std::size_t step = static_cast<std::size_t>(gridDim.x) * blockDim.x;
  for (std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; i < count; i += step)
    local += words[i * stride];
  for (int offset = 16; offset > 0; offset /= 2) local += __shfl_down_sync(0xffffffffu, local, offset);
  if ((threadIdx.x & 31) == 0) atomicAdd(sum, local);
}

}  // namespace

void launch_unpack(const std::byte* packed, const PieceBatch& batch, cudaStream_t stream) {
  if (batch.count == 0) return;
  const std::size_t max_blocks = static_cast<std::size_t>(cml::usable_sm_count()) * 16;
  const unsigned blocks = static_cast<unsigned>(batch.count < max_blocks ? batch.count : max_blocks);
  unpack_kernel<<<blocks, 256, 0, stream>>>(packed, batch.count, batch.piece_bytes, batch.device_base,
                                            batch.device_offsets);
  CUDA_CHECK_LAUNCH();
}

void launch_sum(const std::uint32_t* words, std::size_t n, std::size_t stride, unsigned long long* sum,
                cudaStream_t stream) {
  // Enough blocks to keep every SM busy; more would only add atomics. Over the PCIe bus
  // (zero-copy) many requests in flight are what hides the latency.
  const unsigned blocks = static_cast<unsigned>(cml::usable_sm_count()) * 8;
  sum_kernel<<<blocks, 256, 0, stream>>>(words, n, stride == 0 ? 1 : stride, sum);
  CUDA_CHECK_LAUNCH();
}

void send_one_by_one(const PieceBatch& batch, cudaStream_t stream, bool synchronous) {
  for (std::size_t i = 0; i < batch.count; ++i) {
    std::byte* dst = batch.device_base + batch.device_offsets_host[i];
    const std::byte* src = batch.host_base + batch.host_offsets[i];
    if (synchronous)
      CUDA_CHECK(cudaMemcpy(dst, src, batch.piece_bytes, cudaMemcpyHostToDevice));
    else
      CUDA_CHECK(cudaMemcpyAsync(dst, src, batch.piece_bytes, cudaMemcpyHostToDevice, stream));
  }
}

void send_memcpy_batch(const PieceBatch& batch, cudaStream_t stream) {
  std::vector<void*> dsts(batch.count);
  std::vector<const void*> srcs(batch.count);
  std::vector<std::size_t> sizes(batch.count, batch.piece_bytes);
  for (std::size_t i = 0; i < batch.count; ++i) {
    dsts[i] = batch.device_base + batch.device_offsets_host[i];
    srcs[i] = batch.host_base + batch.host_offsets[i];
  }
#if CUDART_VERSION >= 12080
  // One attribute for all copies: the sources are read in stream order.
  cudaMemcpyAttributes attr{};
  attr.srcAccessOrder = cudaMemcpySrcAccessOrderStream;
  std::size_t attr_index = 0;
#endif
#if CUDART_VERSION >= 13000
  // CUDA 13: (void* const* dsts, const void* const* srcs, const size_t* sizes, size_t count,
  // cudaMemcpyAttributes* attrs, size_t* attrsIdxs, size_t numAttrs, cudaStream_t).
  CUDA_CHECK(cudaMemcpyBatchAsync(dsts.data(), srcs.data(), sizes.data(), batch.count, &attr, &attr_index, 1, stream));
#elif CUDART_VERSION >= 12080
  // CUDA 12.8 and 12.9: the sources are `void**` (not const), and a `size_t* failIdx` (the
  // index of the copy that failed, if one did) comes before the stream.
  std::vector<void*> mutable_srcs(batch.count);
  for (std::size_t i = 0; i < batch.count; ++i) mutable_srcs[i] = const_cast<void*>(srcs[i]);
  std::size_t fail_index = 0;
  CUDA_CHECK(cudaMemcpyBatchAsync(dsts.data(), mutable_srcs.data(), sizes.data(), batch.count, &attr, &attr_index, 1,
                                  &fail_index, stream));
#else
  // Before CUDA 12.8 there is no batch call: the same copies one by one, in stream order.
  for (std::size_t i = 0; i < batch.count; ++i)
    CUDA_CHECK(cudaMemcpyAsync(dsts[i], srcs[i], sizes[i], cudaMemcpyHostToDevice, stream));
#endif
}

}  // namespace ch01
