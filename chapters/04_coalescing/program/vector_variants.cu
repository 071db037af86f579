// Chapter 04 — the float4 copies --mode=vector times beside the learner's copy_vectorized
// and cudaMemcpy (docs/04, "The last few percent"): the grid's shape (grid-stride over a
// full GPU, or a grid that covers the array; threads per block), loads in flight per thread
// (unrolled), and the streaming cache hints.
#include "vector_variants.hpp"

#include "coalescing.cuh"

namespace ch04 {

namespace {

template <int kInFlight>
__global__ void v4_grid_stride(const float4* __restrict__ in, float4* __restrict__ out, std::size_t groups) {
  const std::size_t step = static_cast<std::size_t>(gridDim.x) * blockDim.x;
  std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x;
  for (; i + (kInFlight - 1) * step < groups; i += kInFlight * step) {
    float4 v[kInFlight];
#pragma unroll
    for (int u = 0; u < kInFlight; ++u) v[u] = in[i + u * step];
#pragma unroll
    for (int u = 0; u < kInFlight; ++u) out[i + u * step] = v[u];
  }
  for (; i < groups; i += step) out[i] = in[i];
}

// Each thread copies kPerThread float4, one block's width apart (so a warp stays coalesced).
template <int kPerThread, bool kStreaming>
__global__ void v4_cover(const float4* __restrict__ in, float4* __restrict__ out, std::size_t groups) {
  const std::size_t first = blockIdx.x * static_cast<std::size_t>(blockDim.x) * kPerThread + threadIdx.x;
  float4 v[kPerThread];
#pragma unroll
  for (int u = 0; u < kPerThread; ++u) {
    const std::size_t g = first + static_cast<std::size_t>(u) * blockDim.x;
    if (g < groups) v[u] = kStreaming ? __ldcs(in + g) : in[g];
  }
#pragma unroll
  for (int u = 0; u < kPerThread; ++u) {
    const std::size_t g = first + static_cast<std::size_t>(u) * blockDim.x;
    if (g < groups) {
      if (kStreaming)
        __stcs(out + g, v[u]);
      else
        out[g] = v[u];
    }
  }
}

}  // namespace

std::vector<NamedCopy> vector_variants(const float* in_floats, float* out_floats, std::size_t n) {
  const std::size_t groups = n / 4;
  const auto* in = reinterpret_cast<const float4*>(in_floats);
  auto* out = reinterpret_cast<float4*>(out_floats);
  const auto blocks = [groups](unsigned threads, int per_thread) {
    return static_cast<unsigned>((groups + threads * per_thread - 1) / (threads * per_thread));
  };
  const unsigned full = grid_for(~std::size_t{0} >> 8);
  return {
      {"grid-stride, full GPU, 1 float4 in flight",
       [=](cudaStream_t st) { v4_grid_stride<1><<<full, 256, 0, st>>>(in, out, groups); }},
      {"grid-stride, full GPU, 4 float4 in flight",
       [=](cudaStream_t st) { v4_grid_stride<4><<<full, 256, 0, st>>>(in, out, groups); }},
      {"grid-stride, 4x the full GPU's blocks, 4 in flight",
       [=](cudaStream_t st) { v4_grid_stride<4><<<4 * full, 256, 0, st>>>(in, out, groups); }},
      {"covering grid, 1 float4 per thread, 256 threads",
       [=](cudaStream_t st) { v4_cover<1, false><<<blocks(256, 1), 256, 0, st>>>(in, out, groups); }},
      {"covering grid, 1 float4 per thread, 128 threads",
       [=](cudaStream_t st) { v4_cover<1, false><<<blocks(128, 1), 128, 0, st>>>(in, out, groups); }},
      {"covering grid, 1 float4 per thread, 1024 threads",
       [=](cudaStream_t st) { v4_cover<1, false><<<blocks(1024, 1), 1024, 0, st>>>(in, out, groups); }},
      {"covering grid, 2 float4 per thread (unrolled)",
       [=](cudaStream_t st) { v4_cover<2, false><<<blocks(256, 2), 256, 0, st>>>(in, out, groups); }},
      {"covering grid, 4 float4 per thread (unrolled)",
       [=](cudaStream_t st) { v4_cover<4, false><<<blocks(256, 4), 256, 0, st>>>(in, out, groups); }},
      {"covering grid, 1 float4 per thread, __ldcs/__stcs",
       [=](cudaStream_t st) { v4_cover<1, true><<<blocks(256, 1), 256, 0, st>>>(in, out, groups); }},
  };
}

}  // namespace ch04
