// Chapter 05 — what the chapter provides: the ceilings (a tile-shaped copy) and the naive
// transpose the tiled ones are measured against, and the access-width experiments whose
// wavefronts Nsight Compute counts and the bank model predicts (cml/banks.hpp).
#include "transpose.cuh"

#include "cml/errors.hpp"

#include <stdexcept>
#include <string>

namespace ch05 {

namespace {

__global__ void copy_tiles_kernel(const float* __restrict__ in, float* __restrict__ out, int rows, int cols) {
  const int c = blockIdx.x * kTile + threadIdx.x;
  const int r0 = blockIdx.y * kTile + threadIdx.y;
  if (c >= cols) return;
  for (int k = 0; k < kTile && r0 + k < rows; k += kBlockRows) {
    const std::size_t i = static_cast<std::size_t>(r0 + k) * cols + c;
    out[i] = in[i];
  }
}

__global__ void transpose_naive_kernel(const float* __restrict__ in, float* __restrict__ out, int rows, int cols) {
  const int c = blockIdx.x * kTile + threadIdx.x;
  const int r0 = blockIdx.y * kTile + threadIdx.y;
  if (c >= cols) return;
  for (int k = 0; k < kTile && r0 + k < rows; k += kBlockRows)
    out[static_cast<std::size_t>(c) * rows + r0 + k] = in[static_cast<std::size_t>(r0 + k) * cols + c];
}

// Every component of a loaded vector is used, so nvcc keeps the one wide load.
__device__ float sum(float v) { return v; }
__device__ float sum(float2 v) { return v.x + v.y; }
__device__ float sum(float4 v) { return v.x + v.y + v.z + v.w; }
template <typename V> __device__ V make(float x);
template <> __device__ float make<float>(float x) { return x; }
template <> __device__ float2 make<float2>(float x) { return make_float2(x, x + 1); }
template <> __device__ float4 make<float4>(float x) { return make_float4(x, x + 1, x + 2, x + 3); }

template <typename V>
__global__ void shared_load_experiment(const unsigned* __restrict__ element, unsigned active, float* __restrict__ sink) {
  __shared__ V smem[kExperimentBytes / sizeof(V)];
  float* words = reinterpret_cast<float*>(smem);
  const unsigned lane = threadIdx.x;
  for (unsigned i = lane; i < kExperimentBytes / 4; i += 32) words[i] = static_cast<float>(i);
  const unsigned e = element[lane];
  __syncwarp();
  if ((active >> lane) & 1u) sink[lane] = sum(smem[e]);
}

template <typename V>
__global__ void shared_store_experiment(const unsigned* __restrict__ element, unsigned active, float* __restrict__ sink) {
  __shared__ V smem[kExperimentBytes / sizeof(V)];
  const float* words = reinterpret_cast<const float*>(smem);
  const unsigned lane = threadIdx.x;
  const unsigned e = element[lane];
  const bool on = (active >> lane) & 1u;
  if (on) smem[e] = make<V>(static_cast<float>(lane));
  __syncwarp();
  // Read back the first word this lane stored (4 bytes: the load counters, not the store
  // ones, see it), so the store is not dead code.
  if (on) sink[lane] = words[e * (sizeof(V) / 4)];
}

template <typename V>
void launch_experiment(bool store, const unsigned* element, unsigned active, float* sink, cudaStream_t stream) {
  if (store) shared_store_experiment<V><<<1, 32, 0, stream>>>(element, active, sink);
  else shared_load_experiment<V><<<1, 32, 0, stream>>>(element, active, sink);
  CUDA_CHECK_LAUNCH();
}

}  // namespace

dim3 tile_grid(int rows, int cols) {
  return dim3(static_cast<unsigned>((cols + kTile - 1) / kTile), static_cast<unsigned>((rows + kTile - 1) / kTile));
}

void copy_tiles(const float* in, float* out, int rows, int cols, cudaStream_t stream) {
  if (rows <= 0 || cols <= 0) return;
  copy_tiles_kernel<<<tile_grid(rows, cols), dim3(kTile, kBlockRows), 0, stream>>>(in, out, rows, cols);
  CUDA_CHECK_LAUNCH();
}

void transpose_naive(const float* in, float* out, int rows, int cols, cudaStream_t stream) {
  if (rows <= 0 || cols <= 0) return;
  transpose_naive_kernel<<<tile_grid(rows, cols), dim3(kTile, kBlockRows), 0, stream>>>(in, out, rows, cols);
  CUDA_CHECK_LAUNCH();
}

void run_experiment(bool store, unsigned width, const unsigned* element, unsigned active, float* sink,
                    cudaStream_t stream) {
  switch (width) {
    case 4: return launch_experiment<float>(store, element, active, sink, stream);
    case 8: return launch_experiment<float2>(store, element, active, sink, stream);
    case 16: return launch_experiment<float4>(store, element, active, sink, stream);
    default: throw std::invalid_argument("run_experiment: width must be 4, 8 or 16 bytes, not " + std::to_string(width));
  }
}

}  // namespace ch05
