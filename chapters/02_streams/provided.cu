// Chapter 02 — the code the chapter provides, to read and keep: AddKernel, its launch, and
// the sequential baseline. Built into the program and the tests alike. The learner does
// not edit this file.
#include "streams.cuh"

#include "cml/device.hpp"
#include "cml/errors.hpp"

#include <cstdint>

namespace ch02 {

namespace {

// The CUDA Handbook's AddKernel: reads in[i], adds add_value `cycles` times, writes
// out[i]. The adds are inline PTX marked volatile so the compiler cannot fold the loop
// into one multiply: its run time grows with `cycles`, from a pure copy kernel (0) to an
// arithmetic-bound one.
__global__ void AddKernel(int* __restrict__ out, const int* __restrict__ in, std::size_t n, int add_value, int cycles) {
  const std::size_t stride = static_cast<std::size_t>(gridDim.x) * blockDim.x;
  for (std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; i < n; i += stride) {
    int value = in[i];
    for (int j = 0; j < cycles; ++j) asm volatile("add.s32 %0, %0, %1;" : "+r"(value) : "r"(add_value));
    out[i] = value;
  }
}

int max_blocks() {
  return cml::usable_sm_count() * 8;  // 8 blocks of 256 per SM: a full machine, grid-stride over the rest
}

}  // namespace

void launch_add(const int* in, int* out, std::size_t count, int cycles, int add_value, cudaStream_t stream) {
  if (count == 0) return;
  const std::size_t needed = (count + 255) / 256;
  const unsigned blocks =
      static_cast<unsigned>(needed < static_cast<std::size_t>(max_blocks()) ? needed : max_blocks());
  AddKernel<<<blocks, 256, 0, stream>>>(out, in, count, add_value, cycles);
  CUDA_CHECK_LAUNCH();
}

void run_sequential(const Problem& p, cudaStream_t stream) {
  CUDA_CHECK(cudaMemcpyAsync(p.device_in, p.host_in, p.n * sizeof(int), cudaMemcpyHostToDevice, stream));
  launch_add(p.device_in, p.device_out, p.n, p.cycles, p.add_value, stream);
  CUDA_CHECK(cudaMemcpyAsync(p.host_out, p.device_out, p.n * sizeof(int), cudaMemcpyDeviceToHost, stream));
}

int expected(int in, int cycles, int add_value) {
  // Two's-complement wrap-around, as the GPU's add.s32 does; unsigned arithmetic keeps it
  // defined in C++.
  const std::uint32_t v =
      static_cast<std::uint32_t>(in) + static_cast<std::uint32_t>(cycles) * static_cast<std::uint32_t>(add_value);
  return static_cast<int>(v);
}

}  // namespace ch02
