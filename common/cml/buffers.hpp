// RAII owners for the memory a chapter allocates: device, pinned (page-locked), mapped
// (zero-copy) and managed. Each frees what it owns exactly once; none can be copied, all
// can be moved.
#pragma once

#include "errors.hpp"

#include <cuda_runtime_api.h>

#include <cstddef>
#include <utility>

namespace cml {

namespace detail {
// The shared body of every owner: a pointer, a count, a free function.
template <typename T, cudaError_t (*Free)(void*)>
class Owner {
 public:
  Owner() = default;
  Owner(const Owner&) = delete;
  Owner& operator=(const Owner&) = delete;
  Owner(Owner&& other) noexcept { swap(other); }
  Owner& operator=(Owner&& other) noexcept {
    if (this != &other) {
      reset();
      swap(other);
    }
    return *this;
  }
  ~Owner() { reset(); }

  T* data() const noexcept { return ptr_; }
  T* get() const noexcept { return ptr_; }
  std::size_t size() const noexcept { return count_; }
  std::size_t bytes() const noexcept { return count_ * sizeof(T); }
  T* begin() const noexcept { return ptr_; }
  T* end() const noexcept { return ptr_ + count_; }
  T& operator[](std::size_t i) const noexcept { return ptr_[i]; }
  explicit operator bool() const noexcept { return ptr_ != nullptr; }

  void reset() noexcept {
    if (ptr_ != nullptr) warn_on_error(Free(ptr_), "freeing a CUDA buffer");
    ptr_ = nullptr;
    count_ = 0;
  }

 protected:
  void adopt(T* p, std::size_t count) noexcept {
    ptr_ = p;
    count_ = count;
  }

 private:
  void swap(Owner& o) noexcept {
    std::swap(ptr_, o.ptr_);
    std::swap(count_, o.count_);
  }
  T* ptr_ = nullptr;
  std::size_t count_ = 0;
};
}  // namespace detail

// Device memory from cudaMalloc.
template <typename T>
class DeviceBuffer : public detail::Owner<T, cudaFree> {
 public:
  DeviceBuffer() = default;
  explicit DeviceBuffer(std::size_t count) {
    void* p = nullptr;
    CUDA_CHECK(cudaMalloc(&p, count * sizeof(T)));
    this->adopt(static_cast<T*>(p), count);
  }
};

// Page-locked host memory from cudaHostAlloc. flags: cudaHostAllocDefault, Portable,
// Mapped, WriteCombined (combinable).
template <typename T>
class PinnedBuffer : public detail::Owner<T, cudaFreeHost> {
 public:
  PinnedBuffer() = default;
  explicit PinnedBuffer(std::size_t count, unsigned flags = cudaHostAllocDefault) {
    void* p = nullptr;
    CUDA_CHECK(cudaHostAlloc(&p, count * sizeof(T), flags));
    this->adopt(static_cast<T*>(p), count);
  }
};

// Mapped pinned memory: the host pointer and the device's view of the same bytes.
template <typename T>
class MappedBuffer : public PinnedBuffer<T> {
 public:
  MappedBuffer() = default;
  explicit MappedBuffer(std::size_t count, unsigned extra_flags = 0)
      : PinnedBuffer<T>(count, cudaHostAllocMapped | extra_flags) {
    void* d = nullptr;
    CUDA_CHECK(cudaHostGetDevicePointer(&d, this->data(), 0));
    device_ = static_cast<T*>(d);
  }
  T* device_data() const noexcept { return device_; }

 private:
  T* device_ = nullptr;
};

// Managed (unified) memory. Callers must check the size against cudaMemGetInfo first
// (device.hpp: require_fits_device): oversubscribing managed memory can hang the GPU.
template <typename T>
class ManagedBuffer : public detail::Owner<T, cudaFree> {
 public:
  ManagedBuffer() = default;
  explicit ManagedBuffer(std::size_t count, unsigned flags = cudaMemAttachGlobal) {
    void* p = nullptr;
    CUDA_CHECK(cudaMallocManaged(&p, count * sizeof(T), flags));
    this->adopt(static_cast<T*>(p), count);
  }
};

// Copies `count` elements from the host to the device and waits until they are there. The
// wait is the point: cudaMemcpy from pageable memory may return once the bytes are staged,
// before they reach the device, and a non-blocking stream does not wait for the legacy
// stream, so a kernel launched there next could read what was there before (seen on the
// H200: the last pieces of a 1 MiB input read as zeros).
template <typename T>
void upload(T* dst, const T* src, std::size_t count) {
  if (count == 0) return;
  CUDA_CHECK(cudaMemcpy(dst, src, count * sizeof(T), cudaMemcpyHostToDevice));
  CUDA_CHECK(cudaDeviceSynchronize());
}

// Sets `bytes` bytes of device memory to `value` and waits, for the reason upload waits:
// cudaMemset runs on the legacy stream, which a non-blocking stream does not wait for.
inline void fill_bytes(void* dst, int value, std::size_t bytes) {
  if (bytes == 0) return;
  CUDA_CHECK(cudaMemset(dst, value, bytes));
  CUDA_CHECK(cudaDeviceSynchronize());
}

}  // namespace cml
