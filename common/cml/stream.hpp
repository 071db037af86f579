// RAII owners for streams and events.
#pragma once

#include "errors.hpp"
#include "handle.hpp"

#include <cuda_runtime_api.h>

namespace cml {

namespace detail {
inline constexpr const char* kStreamDestroy = "cudaStreamDestroy";
inline constexpr const char* kEventDestroy = "cudaEventDestroy";
}  // namespace detail

class Stream : public detail::Handle<cudaStream_t, cudaStreamDestroy, detail::kStreamDestroy> {
 public:
  // Non-blocking by default: such a stream never waits for the legacy NULL stream.
  explicit Stream(unsigned flags = cudaStreamNonBlocking) {
    cudaStream_t s = nullptr;
    CUDA_CHECK(cudaStreamCreateWithFlags(&s, flags));
    adopt(s);
  }
  void synchronize() const { CUDA_CHECK(cudaStreamSynchronize(get())); }
};

class Event : public detail::Handle<cudaEvent_t, cudaEventDestroy, detail::kEventDestroy> {
 public:
  explicit Event(unsigned flags = cudaEventDefault) {
    cudaEvent_t e = nullptr;
    CUDA_CHECK(cudaEventCreateWithFlags(&e, flags));
    adopt(e);
  }
  void record(cudaStream_t s) const { CUDA_CHECK(cudaEventRecord(get(), s)); }
  void synchronize() const { CUDA_CHECK(cudaEventSynchronize(get())); }
  // Milliseconds from `start` to this event; both must have completed.
  float since(const Event& start) const {
    float ms = 0.0f;
    CUDA_CHECK(cudaEventElapsedTime(&ms, start.get(), get()));
    return ms;
  }
};

}  // namespace cml
