// A device array that ends where the mapped memory ends: the range after it is reserved
// and never mapped, so a kernel that reads past the array's last element faults
// (cudaErrorIllegalAddress) by itself, in a plain run, instead of reading a neighbour whose
// value it then throws away (a whole-tile copy of a short last tile, a prefetch of a tile
// past the last one). compute-sanitizer's memcheck sees such reads too, but only where it
// runs, and not all of them (a copy that reads nothing at an address past the end).
//
// cudaMalloc cannot promise what follows an allocation, so the memory comes from the
// driver's virtual memory management (reserve an address range, map physical memory onto
// its first part only), reached through the runtime's lookup of driver entry points: the
// course links the runtime only, as it does for the tensor maps of chapters 08 and 09.
//
// Tests of chapters 07 and 08 put their inputs in one (tests/support/tile_sum_checks.hpp).
#pragma once

#include <cstddef>
#include <string>

namespace cml {

// "" when the current device can place an array before an unmapped range; else why not
// (no virtual memory management, or the driver has no entry point for it).
std::string end_guard_unavailable();

// `bytes` bytes of device memory, 16-byte aligned, ending at most 15 bytes before an
// unmapped range of at least `guard_bytes` (the end rounded up to 16 bytes is where the
// mapped memory ends). Every mapped byte, the array's included, is set to `fill` first, and
// the device synchronised. Throws cml::Skip where end_guard_unavailable() says why.
class EndGuardedBytes {
 public:
  static constexpr std::size_t kDefaultGuard = std::size_t{64} << 20;

  explicit EndGuardedBytes(std::size_t bytes, int fill = 0, std::size_t guard_bytes = kDefaultGuard);
  EndGuardedBytes(const EndGuardedBytes&) = delete;
  EndGuardedBytes& operator=(const EndGuardedBytes&) = delete;
  ~EndGuardedBytes();

  void* data() const noexcept { return data_; }
  std::size_t bytes() const noexcept { return bytes_; }
  // The bytes between the array's end and the unmapped range (0 to 15): set to `fill`.
  std::size_t slack() const noexcept { return slack_; }

 private:
  void release() noexcept;
  void* data_ = nullptr;
  std::size_t bytes_ = 0, slack_ = 0;
  unsigned long long base_ = 0;  // the reserved range
  std::size_t reserved_ = 0, mapped_ = 0;
  unsigned long long handle_ = 0;
  bool mapped_ok_ = false;
};

// The same, typed: n elements of T (T's alignment at most 16).
template <typename T>
class EndGuarded {
 public:
  explicit EndGuarded(std::size_t n, int fill = 0, std::size_t guard_bytes = EndGuardedBytes::kDefaultGuard)
      : n_(n), bytes_(n * sizeof(T), fill, guard_bytes) {}
  T* data() const noexcept { return static_cast<T*>(bytes_.data()); }
  std::size_t size() const noexcept { return n_; }
  std::size_t bytes() const noexcept { return n_ * sizeof(T); }
  std::size_t slack() const noexcept { return bytes_.slack(); }

 private:
  std::size_t n_;
  EndGuardedBytes bytes_;
};

}  // namespace cml
