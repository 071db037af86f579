// Chapter 01 — owners of what the learner's functions allocate, released by the learner's
// own release functions; shared by main.cu and the tests.
#pragma once

#include "transfers.cuh"

#include "cml/errors.hpp"

#include <cstddef>
#include <cstring>
#include <memory>

namespace ch01 {

// allocate_pinned's buffer (step 1), freed by free_pinned.
struct LearnerPinned {
  explicit LearnerPinned(std::size_t n) : bytes(n), p(static_cast<std::byte*>(allocate_pinned(n))) {}
  ~LearnerPinned() { cml::release_noexcept([&] { free_pinned(p); }, "free_pinned"); }
  LearnerPinned(const LearnerPinned&) = delete;
  LearnerPinned& operator=(const LearnerPinned&) = delete;
  std::size_t bytes;
  std::byte* p;
};

// A plain host buffer pinned in place by pin_existing (step 2), released by unpin_existing.
struct LearnerRegistered {
  explicit LearnerRegistered(std::size_t n) : storage(new std::byte[n]) {
    std::memset(storage.get(), 0, n);  // touch every page before pinning it
    pin_existing(storage.get(), n);
  }
  ~LearnerRegistered() { cml::release_noexcept([&] { unpin_existing(storage.get()); }, "unpin_existing"); }
  LearnerRegistered(const LearnerRegistered&) = delete;
  LearnerRegistered& operator=(const LearnerRegistered&) = delete;
  std::byte* data() const { return storage.get(); }
  std::unique_ptr<std::byte[]> storage;
};

// allocate_zero_copy's buffer (step 4), freed by free_zero_copy.
struct LearnerZeroCopy {
  explicit LearnerZeroCopy(std::size_t n) : z(allocate_zero_copy(n)) {}
  ~LearnerZeroCopy() { cml::release_noexcept([&] { free_zero_copy(z); }, "free_zero_copy"); }
  LearnerZeroCopy(const LearnerZeroCopy&) = delete;
  LearnerZeroCopy& operator=(const LearnerZeroCopy&) = delete;
  ZeroCopy z;
};

}  // namespace ch01
