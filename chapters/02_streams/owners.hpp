// Chapter 02 — owners of what the learner's functions create, released by the learner's
// own release functions, and the workload built over them; shared by main.cu and the tests.
#pragma once

#include "streams.cuh"

#include "cml/buffers.hpp"
#include "cml/errors.hpp"
#include "cml/verify.hpp"

#include <cstddef>
#include <cstring>
#include <random>
#include <vector>

namespace ch02 {

// allocate_host_ints's buffer, freed by free_host_ints.
struct HostInts {
  explicit HostInts(std::size_t n) : p(allocate_host_ints(n)) {}
  ~HostInts() { cml::release_noexcept([&] { free_host_ints(p); }, "free_host_ints"); }
  HostInts(const HostInts&) = delete;
  HostInts& operator=(const HostInts&) = delete;
  int* p;
};

// create_streams's streams, destroyed by destroy_streams.
struct Streams {
  explicit Streams(int count) : s(create_streams(count)) {}
  ~Streams() { cml::release_noexcept([&] { destroy_streams(s); }, "destroy_streams"); }
  Streams(const Streams&) = delete;
  Streams& operator=(const Streams&) = delete;
  std::vector<cudaStream_t> s;
};

// Fills p's output with a pattern no pipeline writes, so a missed element shows.
inline void poison(const Problem& p) { std::memset(p.host_out, 0xA5, p.n * sizeof(int)); }

// Every output element of p against expected(), computed on the host.
inline cml::VerifyResult verify(const Problem& p) {
  std::vector<int> want(p.n);
  for (std::size_t i = 0; i < p.n; ++i) want[i] = expected(p.host_in[i], p.cycles, p.add_value);
  return cml::compare_exact(p.host_out, want.data(), p.n);
}

// n random ints in the learner's pinned buffers, two device buffers, and the problem over
// them: what the program and the tests run the pipelines on.
struct Workload {
  Workload(std::size_t n, unsigned seed, int cycles) : in(n), out(n), device_in(n), device_out(n) {
    std::minstd_rand rng(seed);
    for (std::size_t i = 0; i < n; ++i) in.p[i] = static_cast<int>(rng());
    problem.host_in = in.p;
    problem.host_out = out.p;
    problem.device_in = device_in.data();
    problem.device_out = device_out.data();
    problem.n = n;
    problem.cycles = cycles;
  }
  HostInts in, out;
  cml::DeviceBuffer<int> device_in, device_out;
  Problem problem;
};

}  // namespace ch02
