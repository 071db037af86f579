// Chapter 01 — a batch of small pieces for step 3, shared by main.cu and the tests:
// scattered in a pinned host arena (gaps between them, not all aligned), landing at
// shuffled device offsets, with the device image they must produce.
#pragma once

#include "transfers.cuh"

#include "cml/buffers.hpp"
#include "cml/errors.hpp"
#include "cml/timing.hpp"
#include "cml/verify.hpp"

#include <algorithm>
#include <cstring>
#include <numeric>
#include <random>
#include <vector>

namespace ch01 {

inline void fill_pattern(std::byte* p, std::size_t n, unsigned seed) {
  std::minstd_rand rng(seed);
  for (std::size_t i = 0; i < n; ++i) p[i] = static_cast<std::byte>(rng() >> 7);
}

struct PieceSet {
  PieceSet(std::size_t count, std::size_t piece_bytes, unsigned seed)
      : arena(count * (piece_bytes + 64)),
        device(count * piece_bytes),
        staging_host(count * piece_bytes),
        staging_device(count * piece_bytes),
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
    batch = PieceBatch{arena.data(), host_offsets.data(), count, piece_bytes,
                             device.data(), device_offsets.data(), device_offsets_host.data()};
    staging = Staging{staging_host.data(), staging_device.data(), count * piece_bytes};
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

}  // namespace ch01
