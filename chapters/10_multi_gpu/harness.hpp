// Chapter 10 — what the program (main.cu) and the tests (tests/test_10_multi_gpu.cpp) share:
// the GPUs the chapter runs on, each with its streams and events; float arrays that live on
// one device; the Jacobi grid split into bands and its CPU reference; the ring's inputs,
// whose sums are exact in any order. Host code: the tests include it.
#pragma once

#include "multi_gpu.cuh"

#include "cml/buffers.hpp"
#include "cml/errors.hpp"

#include <cstddef>
#include <memory>
#include <string>
#include <vector>

namespace ch10 {

// The CUDA devices this process sees, at most kMaxDevices. Throws cml::Skip naming how many
// there are when there are fewer than `at_least` ("needs two GPUs; this machine has one").
std::vector<int> chapter_devices(int at_least = 2);

// n floats of one device's memory, allocated and freed with that device current.
class DeviceArray {
 public:
  DeviceArray() = default;
  DeviceArray(int device, std::size_t n);
  ~DeviceArray();
  DeviceArray(DeviceArray&& o) noexcept;
  DeviceArray& operator=(DeviceArray&& o) noexcept;
  DeviceArray(const DeviceArray&) = delete;
  DeviceArray& operator=(const DeviceArray&) = delete;
  float* data() const { return p_; }
  std::size_t size() const { return n_; }
  int device() const { return device_; }
  // Host <-> device, waiting (a test's or a program's set-up and read-back, never timed).
  void upload(const std::vector<float>& v, std::size_t offset = 0) const;
  std::vector<float> download() const;

 private:
  int device_ = 0;
  float* p_ = nullptr;
  std::size_t n_ = 0;
};

// One GPU's share of the chapter's work: its streams and events, created on it.
struct Member {
  int device = 0;
  cudaStream_t compute = nullptr;  // a non-blocking stream of `device`
  cudaStream_t edges = nullptr;    // another, at the device's highest priority
  cudaEvent_t sent = nullptr, edges_sent = nullptr, done = nullptr, step_done = nullptr;  // timing off
};

// The GPUs the chapter runs on, with a Member each and one pinned staging buffer, all
// released on destruction. Peer access is not enabled here: that is step 1's work.
class Team {
 public:
  explicit Team(const std::vector<int>& devices, std::size_t staging_bytes = 0);
  ~Team();
  Team(const Team&) = delete;
  Team& operator=(const Team&) = delete;
  int size() const { return static_cast<int>(members_.size()); }
  const Member& operator[](int i) const { return members_[static_cast<std::size_t>(i)]; }
  std::vector<int> devices() const;
  // The Link from member a to member b (a's and b's streams, a's event, the staging buffer).
  Link link(int a, int b) const;
  // Waits for every stream of every member.
  void synchronize() const;
  void* staging() const { return staging_.data(); }
  std::size_t staging_bytes() const { return staging_bytes_; }

 private:
  void release() noexcept;
  std::vector<Member> members_;
  cml::PinnedBuffer<std::byte> staging_;
  std::size_t staging_bytes_ = 0;
};

// The matrix of what the hardware allows (cudaDeviceCanAccessPeer), without enabling any.
PeerMatrix peer_capability(const std::vector<int>& devices);
// "0->1 1->0" (every enabled pair), or "none".
std::string describe(const PeerMatrix& m);

// ---- Step 3: the grid ------------------------------------------------------------------

// A grid of `rows` inner rows and `cols` columns between two fixed boundary rows: row 0 and
// row rows + 1 (rows + 2 in all), its values a hash of the position, the boundary rows and
// columns included.
std::vector<float> initial_grid(int rows, int cols, unsigned seed);
// `iterations` Jacobi sweeps on the CPU, as launch_jacobi_rows sweeps a band.
std::vector<float> jacobi_reference(std::vector<float> grid, int rows, int cols, int iterations);
// `rows` split over `count` bands, top first; the first rows % count bands one row longer.
std::vector<int> split_rows(int rows, int count);

// The grid on the team's GPUs: each band's cur and next, halos filled from the grid, and
// the Slabs over them.
class Bands {
 public:
  Bands(const Team& team, const std::vector<float>& grid, int rows, int cols);
  std::vector<Slab>& slabs() { return slabs_; }
  // The whole grid again, from each band's cur (its inner rows) and the fixed boundary rows.
  std::vector<float> gather() const;
  // Both buffers of every band as they were made (for timing again from the same start).
  void reset();

 private:
  std::vector<float> grid_;
  int rows_ = 0, cols_ = 0;
  std::vector<DeviceArray> a_, b_;
  std::vector<Slab> slabs_;
};

// ---- Step 4: the ring ---------------------------------------------------------------------

// Rank r's i-th input: a small whole number, so sums over up to eight ranks are exact in
// any order of addition.
float rank_value(int r, std::size_t i);
// What every rank's data must hold after the all-reduce.
std::vector<float> ring_reference(int count, std::size_t n);

// Each team member's rank over an array of n floats on its device, filled with rank_value.
class Ring {
 public:
  Ring(const Team& team, std::size_t n);
  std::vector<Rank>& ranks() { return ranks_; }
  void refill();  // rank_value again (waits)
  std::size_t n() const { return n_; }
  // The first rank and element whose data differs from ring_reference, or "".
  std::string first_wrong() const;

 private:
  std::size_t n_;
  std::vector<DeviceArray> data_;
  std::vector<Rank> ranks_;
};

}  // namespace ch10
