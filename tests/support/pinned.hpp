// Whether CUDA sees a host pointer as page-locked (pinned) memory: what the tests of every
// chapter that hands out or registers host buffers assert before trusting a copy's speed.
#pragma once

#include "cml/errors.hpp"

#include <cuda_runtime_api.h>

namespace cml::test {

// True for memory from cudaMallocHost, cudaHostAlloc or cudaHostRegister (and the device
// view of mapped memory): cudaPointerGetAttributes reports it as cudaMemoryTypeHost.
inline bool is_pinned(const void* p) {
  cudaPointerAttributes attr{};
  CUDA_CHECK(cudaPointerGetAttributes(&attr, p));
  return attr.type == cudaMemoryTypeHost;
}

}  // namespace cml::test
