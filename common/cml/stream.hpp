// RAII owners for streams and events.
#pragma once

#include "errors.hpp"

#include <cuda_runtime_api.h>

#include <utility>

namespace cml {

class Stream {
 public:
  // Non-blocking by default: such a stream never waits for the legacy NULL stream.
  explicit Stream(unsigned flags = cudaStreamNonBlocking) {
    CUDA_CHECK(cudaStreamCreateWithFlags(&s_, flags));
  }
  Stream(const Stream&) = delete;
  Stream& operator=(const Stream&) = delete;
  Stream(Stream&& o) noexcept : s_(std::exchange(o.s_, nullptr)) {}
  Stream& operator=(Stream&& o) noexcept {
    if (this != &o) { reset(); s_ = std::exchange(o.s_, nullptr); }
    return *this;
  }
  ~Stream() { reset(); }

  cudaStream_t get() const noexcept { return s_; }
  operator cudaStream_t() const noexcept { return s_; }
  void synchronize() const { CUDA_CHECK(cudaStreamSynchronize(s_)); }

 private:
  void reset() noexcept {
    if (s_ != nullptr) detail::warn_on_error(cudaStreamDestroy(s_), "cudaStreamDestroy");
    s_ = nullptr;
  }
  cudaStream_t s_ = nullptr;
};

class Event {
 public:
  explicit Event(unsigned flags = cudaEventDefault) { CUDA_CHECK(cudaEventCreateWithFlags(&e_, flags)); }
  Event(const Event&) = delete;
  Event& operator=(const Event&) = delete;
  Event(Event&& o) noexcept : e_(std::exchange(o.e_, nullptr)) {}
  Event& operator=(Event&& o) noexcept {
    if (this != &o) { reset(); e_ = std::exchange(o.e_, nullptr); }
    return *this;
  }
  ~Event() { reset(); }

  cudaEvent_t get() const noexcept { return e_; }
  operator cudaEvent_t() const noexcept { return e_; }
  void record(cudaStream_t s) const { CUDA_CHECK(cudaEventRecord(e_, s)); }
  void synchronize() const { CUDA_CHECK(cudaEventSynchronize(e_)); }
  // Milliseconds from `start` to this event; both must have completed.
  float since(const Event& start) const {
    float ms = 0.0f;
    CUDA_CHECK(cudaEventElapsedTime(&ms, start.e_, e_));
    return ms;
  }

 private:
  void reset() noexcept {
    if (e_ != nullptr) detail::warn_on_error(cudaEventDestroy(e_), "cudaEventDestroy");
    e_ = nullptr;
  }
  cudaEvent_t e_ = nullptr;
};

}  // namespace cml
