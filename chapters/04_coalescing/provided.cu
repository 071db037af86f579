// Chapter 04 — the kernels the chapter provides: offset and stride copies for the
// experiments, and the array-of-structures update step 3 is measured against.
#include "coalescing.cuh"

#include "cml/device.hpp"
#include "cml/errors.hpp"

namespace ch04 {

namespace {

template <typename T>
__global__ void offset_copy(const T* __restrict__ in, T* __restrict__ out, std::size_t n, std::size_t offset) {
  const std::size_t step = static_cast<std::size_t>(gridDim.x) * blockDim.x;
  for (std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; i < n; i += step)
    out[i] = in[i + offset];
}

template <typename T>
__global__ void stride_copy(const T* __restrict__ in, T* __restrict__ out, std::size_t n, std::size_t stride) {
  const std::size_t step = static_cast<std::size_t>(gridDim.x) * blockDim.x;
  for (std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; i < n; i += step)
    out[i] = in[i * stride];  // 64-bit index: a stride-32 copy of 128 M elements reads 4 G
}

__global__ void advance_aos_kernel(Particle* __restrict__ p, std::size_t n, float dt) {
  const std::size_t step = static_cast<std::size_t>(gridDim.x) * blockDim.x;
  for (std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; i < n; i += step) {
    p[i].x += p[i].vx * dt;
    p[i].y += p[i].vy * dt;
    p[i].z += p[i].vz * dt;
  }
}

template <typename T>
void launch_typed(bool offset_kind, const void* in, void* out, std::size_t n, std::size_t k, cudaStream_t s) {
  if (n == 0) return;
  if (offset_kind)
    offset_copy<T><<<grid_for(n), 256, 0, s>>>(static_cast<const T*>(in), static_cast<T*>(out), n, k);
  else
    stride_copy<T><<<grid_for(n), 256, 0, s>>>(static_cast<const T*>(in), static_cast<T*>(out), n, k);
  CUDA_CHECK_LAUNCH();
}

void launch(bool offset_kind, const void* in, void* out, std::size_t n, std::size_t k, unsigned elem_bytes,
            cudaStream_t s) {
  switch (elem_bytes) {
    case 4: return launch_typed<float>(offset_kind, in, out, n, k, s);
    case 8: return launch_typed<double>(offset_kind, in, out, n, k, s);
    case 16: return launch_typed<float4>(offset_kind, in, out, n, k, s);
    default: throw cml::UsageError("element size must be 4, 8 or 16 bytes");
  }
}

}  // namespace

unsigned grid_for(std::size_t work_items) {
  const std::size_t full = static_cast<std::size_t>(cml::usable_sm_count()) * 8;  // 8 x 256 threads: a full SM
  const std::size_t needed = (work_items + 255) / 256;
  return static_cast<unsigned>(needed == 0 ? 1 : (needed < full ? needed : full));
}

void launch_offset_copy(const void* in, void* out, std::size_t n, std::size_t offset, unsigned elem_bytes,
                        cudaStream_t stream) {
  launch(true, in, out, n, offset, elem_bytes, stream);
}

void launch_stride_copy(const void* in, void* out, std::size_t n, std::size_t stride, unsigned elem_bytes,
                        cudaStream_t stream) {
  launch(false, in, out, n, stride, elem_bytes, stream);
}

void advance_aos(Particle* p, std::size_t n, float dt, cudaStream_t stream) {
  if (n == 0) return;
  advance_aos_kernel<<<grid_for(n), 256, 0, stream>>>(p, n, dt);
  CUDA_CHECK_LAUNCH();
}

}  // namespace ch04
