// A device array with poisoned neighbours: every byte of the array and of kGuard elements
// after it is 0xFF before the kernel runs, so a kernel that writes past the end, or leaves
// an element unwritten, shows by itself when the array is read back, not only under
// compute-sanitizer. Programs and tests of every chapter that checks an output use it.
#pragma once

#include "buffers.hpp"
#include "errors.hpp"

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstring>
#include <string>
#include <vector>

namespace cml {

template <typename T>
class GuardedBuffer {
 public:
  static constexpr std::size_t kGuard = 64;  // poisoned elements after the array

  // n elements and the guard, poisoned, on `stream` (the legacy stream by default: then
  // the poison has landed before any later work).
  explicit GuardedBuffer(std::size_t n, cudaStream_t stream = nullptr) : n_(n), buffer_(n + kGuard) {
    poison(stream);
    if (stream == nullptr) CUDA_CHECK(cudaDeviceSynchronize());
  }

  T* data() const noexcept { return buffer_.data(); }
  std::size_t size() const noexcept { return n_; }
  std::size_t bytes() const noexcept { return n_ * sizeof(T); }

  // Poisons the array and its guard again, enqueued on `stream`.
  void poison(cudaStream_t stream) { CUDA_CHECK(cudaMemsetAsync(buffer_.data(), 0xFF, buffer_.bytes(), stream)); }

  // Reads the array into `got` after `stream`'s work (the device's, for the legacy
  // stream): "" when the guard is still poison, else "<what> was written past its end
  // (element k after it)".
  std::string read(std::vector<T>& got, const std::string& what, cudaStream_t stream = nullptr) const {
    std::vector<T> all(buffer_.size());
    CUDA_CHECK(cudaMemcpyAsync(all.data(), buffer_.data(), buffer_.bytes(), cudaMemcpyDeviceToHost, stream));
    CUDA_CHECK(stream == nullptr ? cudaDeviceSynchronize() : cudaStreamSynchronize(stream));
    got.assign(all.begin(), all.begin() + static_cast<std::ptrdiff_t>(n_));
    for (std::size_t i = n_; i < all.size(); ++i)
      if (!is_poison(all[i]))
        return what + " was written past its end (element " + std::to_string(i - n_) + " after it)";
    return "";
  }

  // Whether a value read back is still the poison: an element no thread wrote.
  static bool is_poison(const T& v) {
    unsigned char bytes[sizeof(T)];
    std::memcpy(bytes, &v, sizeof(T));
    for (unsigned char b : bytes)
      if (b != 0xFF) return false;
    return true;
  }

 private:
  std::size_t n_;
  DeviceBuffer<T> buffer_;
};

}  // namespace cml
