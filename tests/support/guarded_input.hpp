// A kernel's input, uploaded, in memory that ends where the mapped memory ends
// (cml/end_guard.hpp) where the GPU can place it so: a load past its last element then
// faults by itself. The results alone cannot show such a load when what it brings is never
// stored: an edge tile's element outside the matrix, a thread past n that loads before its
// bound check, a segment's rows past the last. Where the GPU cannot (no virtual memory
// management), zeros follow the input and only the results are checked.
//
// Before the input, and in the 0-15 bytes after it that the guard cannot reach, every byte is
// 0xFF (a NaN for floats): a load there brings a value that shows in any result it feeds,
// where zeros would pass for "outside the input counts as 0" (a stencil reading the rows
// above row 0).
//
// A fault is sticky: every later CUDA call of the process fails too, so a test stops at the
// first one (cuda_fault.hpp) and says what it means with read_past().
#pragma once

#include "cml/buffers.hpp"
#include "cml/end_guard.hpp"

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

namespace cml::test {

template <typename T>
class GuardedInput {
 public:
  explicit GuardedInput(const std::vector<T>& host) {
    if (cml::end_guard_unavailable().empty()) {
      guarded_.emplace(kHead + host.size(), 0xFF);
      cml::upload(guarded_->data() + kHead, host.data(), host.size());
    } else {
      std::vector<T> padded(host);
      padded.resize(host.size() + kPad, T{});
      plain_.emplace(padded.size());
      cml::upload(plain_->data(), padded.data(), padded.size());
    }
  }
  const T* data() const { return guarded_ ? guarded_->data() + kHead : plain_->data(); }

  // What a fault of a kernel that read this input means, to follow "faulted (...)": `name`
  // is the input's name in the contract, `who` which threads must not load, `fault` the
  // fault's own text (a misaligned access is not a read past the end).
  std::string read_past(const std::string& name, const std::string& who, const std::string& fault = "") const {
    if (fault.find("misaligned") != std::string::npos || fault.find("Misaligned") != std::string::npos)
      return ". A misaligned address: an access of 8 or 16 bytes (a float2, a float4) must start at a multiple of "
             "its size — a vector view of " +
             name + " starts at " + name + " itself or a multiple of the vector's floats past it";
    if (!guarded_) return "";
    return ". " + name + " ends where the mapped memory ends, so a thread loaded past " + name +
           "'s last element: " + who + " must not load it";
  }

 private:
  static constexpr std::size_t kPad = 1024;  // zeros after the input where it cannot end at a page
  // 0xFF elements mapped before the input, whatever its size (a whole number of granules
  // would leave none), a multiple of 16 bytes so the input keeps its alignment.
  static constexpr std::size_t kHead = (std::size_t{256} << 10) / sizeof(T);
  static_assert(kHead * sizeof(T) % 16 == 0);
  std::optional<cml::EndGuarded<T>> guarded_;
  std::optional<cml::DeviceBuffer<T>> plain_;
};

}  // namespace cml::test
