// Chapter 01 — what the program (main.cu) and the tests share: owners of what the learner's
// functions allocate, released by the learner's own release functions; the byte pattern a
// copy must deliver and the round trip that checks it; step 2's batch of small pieces; step 3's
// sums over mapped memory.
#pragma once

#include "transfers.cuh"

#include "cml/buffers.hpp"
#include "cml/errors.hpp"
#include "cml/timing.hpp"
#include "cml/verify.hpp"

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <memory>
#include <numeric>
#include <random>
#include <vector>

namespace ch01 {

// ---- Owners of the learner's allocations ------------------------------------------------

// allocate_pinned's buffer (step 1), freed by free_pinned.
struct LearnerPinned {
  explicit LearnerPinned(std::size_t n) : bytes(n), p(static_cast<std::byte*>(allocate_pinned(n))) {}
  ~LearnerPinned() {
    cml::release_noexcept([&] { free_pinned(p); }, "free_pinned");
  }
  LearnerPinned(const LearnerPinned&) = delete;
  LearnerPinned& operator=(const LearnerPinned&) = delete;
  std::size_t bytes;
  std::byte* p;
};

// A plain host buffer pinned in place by pin_existing (step 1), released by unpin_existing.
struct LearnerRegistered {
  explicit LearnerRegistered(std::size_t n) : storage(new std::byte[n]) {
    std::memset(storage.get(), 0, n);  // touch every page before pinning it
    pin_existing(storage.get(), n);
  }
  ~LearnerRegistered() {
    cml::release_noexcept([&] { unpin_existing(storage.get()); }, "unpin_existing");
  }
  LearnerRegistered(const LearnerRegistered&) = delete;
  LearnerRegistered& operator=(const LearnerRegistered&) = delete;
  std::byte* data() const { return storage.get(); }
  std::unique_ptr<std::byte[]> storage;
};

// allocate_zero_copy's buffer (step 3), freed by free_zero_copy.
struct LearnerZeroCopy {
  explicit LearnerZeroCopy(std::size_t n) : z(allocate_zero_copy(n)) {}
  ~LearnerZeroCopy() {
    cml::release_noexcept([&] { free_zero_copy(z); }, "free_zero_copy");
  }
  LearnerZeroCopy(const LearnerZeroCopy&) = delete;
  LearnerZeroCopy& operator=(const LearnerZeroCopy&) = delete;
  ZeroCopy z;
};

// ---- What a copy must deliver -----------------------------------------------------------

inline void fill_pattern(std::byte* p, std::size_t n, unsigned seed) {
  std::minstd_rand rng(seed);
  for (std::size_t i = 0; i < n; ++i) p[i] = static_cast<std::byte>(rng() >> 7);
}

inline std::vector<std::byte> pattern(std::size_t n, unsigned seed) {
  std::vector<std::byte> bytes(n);
  fill_pattern(bytes.data(), n, seed);
  return bytes;
}

// Sends `want` from `host` to `device` and back on `stream`, clearing `host` in between,
// and compares what came back byte for byte: the bytes of a kind of memory only count if
// they arrive. `host` and `device` hold at least want.size() bytes.
inline cml::VerifyResult round_trip(std::byte* host, std::byte* device, const std::vector<std::byte>& want,
                                    cudaStream_t stream) {
  const std::size_t n = want.size();
  std::memcpy(host, want.data(), n);
  CUDA_CHECK(cudaMemcpyAsync(device, host, n, cudaMemcpyHostToDevice, stream));
  CUDA_CHECK(cudaStreamSynchronize(stream));
  std::memset(host, 0, n);
  CUDA_CHECK(cudaMemcpyAsync(host, device, n, cudaMemcpyDeviceToHost, stream));
  CUDA_CHECK(cudaStreamSynchronize(stream));
  return cml::compare_exact(host, want.data(), n);
}

// ---- Step 2's batch ---------------------------------------------------------------------

// `count` pieces scattered in a pinned host arena (gaps between them, not all aligned),
// landing at shuffled device offsets, with the device image they must produce. Staging is
// larger than the pieces by one piece and a few odd bytes, as the contract allows ("at
// least"), so a copy sized by staging.bytes moves bytes nobody packed and shows in the trace.
struct PieceSet {
  static std::size_t staging_bytes(std::size_t count, std::size_t piece_bytes) {
    return (count + 1) * piece_bytes + 12;
  }
  PieceSet(std::size_t count, std::size_t piece_bytes, unsigned seed)
      : arena(count * (piece_bytes + 64)),
        device(count * piece_bytes),
        staging_host(staging_bytes(count, piece_bytes)),
        staging_device(staging_bytes(count, piece_bytes)),
        host_offsets(count),
        device_offsets_host(count),
        device_offsets(count) {
    fill_pattern(arena.data(), arena.size(), seed);
    std::vector<std::size_t> slots(count);
    std::iota(slots.begin(), slots.end(), 0);
    std::shuffle(slots.begin(), slots.end(), std::minstd_rand(seed));
    for (std::size_t i = 0; i < count; ++i) {
      host_offsets[i] = i * (piece_bytes + 64) + (i % 3);  // gaps, and not all aligned
      device_offsets_host[i] = slots[i] * piece_bytes;
    }
    CUDA_CHECK(cudaMemcpy(device_offsets.data(), device_offsets_host.data(), count * sizeof(std::size_t),
                          cudaMemcpyHostToDevice));
    want.resize(count * piece_bytes);
    for (std::size_t i = 0; i < count; ++i)
      std::memcpy(want.data() + device_offsets_host[i], arena.data() + host_offsets[i], piece_bytes);
    batch = PieceBatch{arena.data(),          host_offsets.data(),       count, piece_bytes, device.data(),
                       device_offsets.data(), device_offsets_host.data()};
    staging = Staging{staging_host.data(), staging_device.data(), staging_bytes(count, piece_bytes)};
  }

  // Clears the destination, runs `send`, and compares the device image with `want`.
  cml::VerifyResult check(const cml::Work& send, cudaStream_t stream) {
    CUDA_CHECK(cudaMemsetAsync(device.data(), 0xEE, device.bytes(), stream));
    send(stream);
    CUDA_CHECK(cudaStreamSynchronize(stream));
    std::vector<std::byte> got(device.size());
    CUDA_CHECK(cudaMemcpy(got.data(), device.data(), device.bytes(), cudaMemcpyDeviceToHost));
    return cml::compare_exact(got.data(), want.data(), got.size());
  }

  cml::PinnedBuffer<std::byte> arena;
  cml::DeviceBuffer<std::byte> device;
  cml::PinnedBuffer<std::byte> staging_host;
  cml::DeviceBuffer<std::byte> staging_device;
  std::vector<std::size_t> host_offsets, device_offsets_host;
  cml::DeviceBuffer<std::size_t> device_offsets;
  std::vector<std::byte> want;
  PieceBatch batch;
  Staging staging;
};

// ---- Step 3's sums ----------------------------------------------------------------------

// Fills n words with a seeded pattern and returns their sum (what launch_sum must find).
inline unsigned long long fill_words(std::uint32_t* words, std::size_t n, unsigned seed) {
  std::minstd_rand rng(seed);
  unsigned long long sum = 0;
  for (std::size_t i = 0; i < n; ++i) sum += (words[i] = static_cast<std::uint32_t>(rng()));
  return sum;
}

// Enqueues step 3's read on `stream`: clear *sum, prepare_for_device, then `reads` passes of
// launch_sum over the n mapped words of `zc` (every `stride`-th word).
inline void sum_zero_copy(const ZeroCopy& zc, std::size_t n, std::size_t stride, int reads, unsigned long long* sum,
                          cudaStream_t stream) {
  CUDA_CHECK(cudaMemsetAsync(sum, 0, sizeof(unsigned long long), stream));
  prepare_for_device(zc, stream);
  for (int r = 0; r < reads; ++r) launch_sum(static_cast<const std::uint32_t*>(zc.device), n, stride, sum, stream);
}

// Waits for `stream`'s work and returns the device's *sum.
inline unsigned long long read_sum(const unsigned long long* sum, cudaStream_t stream) {
  unsigned long long got = 0;
  CUDA_CHECK(cudaMemcpyAsync(&got, sum, sizeof got, cudaMemcpyDeviceToHost, stream));
  CUDA_CHECK(cudaStreamSynchronize(stream));
  return got;
}

}  // namespace ch01
