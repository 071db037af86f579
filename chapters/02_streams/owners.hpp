// Chapter 02 — owners of what the learner's functions create, released by the learner's
// own release functions; shared by main.cu and the tests.
#pragma once

#include "streams.cuh"

#include "cml/errors.hpp"

#include <cstddef>
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

}  // namespace ch02
