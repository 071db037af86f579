// Chapter 01's test helpers (tests/test_01_transfers.cpp includes this, and nothing else does):
// the learner's buffers as owners that free them (and name a crash while freeing), and the
// round trips each step is judged on. The cases and the speed bars are in the .cpp.
#pragma once

#include "api_calls.hpp"
#include "enqueue_only.hpp"
#include "gate.hpp"
#include "gpu.hpp"
#include "harness.hpp"
#include "integrity.hpp"
#include "per_call.hpp"
#include "pinned.hpp"
#include "transfers.cuh"
#include "cml/api_trace.hpp"
#include "cml/buffers.hpp"
#include "cml/stream.hpp"
#include "cml/table.hpp"
#include "cml/timing.hpp"
#include "cml/trace.hpp"
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <exception>
#include <memory>
#include <random>
#include <string>
#include <vector>

namespace {

const char* const kFreePinnedCrash =
    "free_pinned crashed the process: memory from cudaMallocHost/cudaHostAlloc did not come from malloc, so "
    "free()/delete on it is undefined; release it with cudaFreeHost (step 1; ./lab hint 01)";
const char* const kUnpinCrash =
    "unpin_existing crashed the process: the range belongs to the program; undo the registration with "
    "cudaHostUnregister, never free it (step 1; ./lab hint 01)";
const char* const kFreeZeroCopyCrash =
    "free_zero_copy crashed the process: mapped memory from cudaHostAlloc is released with cudaFreeHost, "
    "not free()/delete, and there is no device allocation to free (step 3; ./lab hint 01)";

// allocate_pinned's buffer, freed by free_pinned; a crash while freeing names its cause.
struct Pinned {
  explicit Pinned(std::size_t n) : bytes(n), p(static_cast<std::byte*>(ch01::allocate_pinned(n))) {}
  ~Pinned() {
    if (p == nullptr) return;
    cml::test::CrashNote note(kFreePinnedCrash);
    cml::release_noexcept([&] { ch01::free_pinned(p); }, "free_pinned");
  }
  Pinned(const Pinned&) = delete;
  Pinned& operator=(const Pinned&) = delete;
  std::byte* data() const { return p; }
  std::size_t bytes;
  std::byte* p;
};

// A plain host buffer pinned in place by pin_existing, released by unpin_existing.
struct Registered {
  explicit Registered(std::size_t n) : storage(new std::byte[n]), bytes(n) {
    std::memset(storage.get(), 0, n);  // touch every page before pinning it
    ch01::pin_existing(storage.get(), n);
  }
  ~Registered() {
    if (!pinned) return;
    cml::test::CrashNote note(kUnpinCrash);
    cml::release_noexcept([&] { ch01::unpin_existing(storage.get()); }, "unpin_existing");
  }
  Registered(const Registered&) = delete;
  Registered& operator=(const Registered&) = delete;
  std::byte* data() const { return storage.get(); }
  std::unique_ptr<std::byte[]> storage;
  std::size_t bytes;
  bool pinned = true;
};

// allocate_zero_copy's buffer, freed by free_zero_copy.
struct ZeroCopyOwner {
  explicit ZeroCopyOwner(std::size_t n) : z(ch01::allocate_zero_copy(n)) {}
  ~ZeroCopyOwner() {
    if (!owned) return;
    cml::test::CrashNote note(kFreeZeroCopyCrash);
    cml::release_noexcept([&] { ch01::free_zero_copy(z); }, "free_zero_copy");
  }
  ZeroCopyOwner(const ZeroCopyOwner&) = delete;
  ZeroCopyOwner& operator=(const ZeroCopyOwner&) = delete;
  ch01::ZeroCopy z;
  bool owned = true;
};

// Sizes for a round trip: fixed awkward ones and one from a seed that changes every run.
std::vector<std::size_t> trip_sizes(unsigned seed) {
  std::minstd_rand rng(seed);
  return {1, 4097, (std::size_t{1} << 20) + 3, 1 + rng() % (std::size_t{3} << 20)};
}

// Host -> device -> host through `host` with cudaMemcpyAsync. With `gated`, the copy back
// is queued behind a gate kernel that holds the stream shut: did that copy's call return
// while the gate was still closed (only page-locked memory allows it; a copy into pageable
// memory returns only once the gate gives up)? And did every byte come back?
struct Trip {
  bool returned_early = false;
  cml::VerifyResult result;
};
Trip async_round_trip(std::byte* host, std::size_t n, unsigned seed, bool gated) {
  cml::Stream stream;
  cml::DeviceBuffer<std::byte> device(n);
  const auto want = ch01::pattern(n, seed);
  std::memcpy(host, want.data(), n);
  CUDA_CHECK(cudaMemcpyAsync(device.data(), host, n, cudaMemcpyHostToDevice, stream));
  CUDA_CHECK(cudaStreamSynchronize(stream));
  std::memset(host, 0, n);
  Trip t;
  if (gated) {
    cml::test::Gate gate;
    gate.close(stream);
    CUDA_CHECK(cudaMemcpyAsync(host, device.data(), n, cudaMemcpyDeviceToHost, stream));
    t.returned_early = !gate.timed_out();
  } else {  // a size before this one already waited: no gate, so no wait for its limit
    CUDA_CHECK(cudaMemcpyAsync(host, device.data(), n, cudaMemcpyDeviceToHost, stream));
  }
  CUDA_CHECK(cudaStreamSynchronize(stream));
  t.result = cml::compare_exact(host, want.data(), n);
  return t;
}

// Runs `release` (the learner's free or unregister) under the callback recorder and a crash
// note: the calls it made, and the error it threw, if any (a wrong call fails there, and the
// test still names the mistake).
using Released = cml::test::Recorded;
template <class F>
Released released(F&& release, const char* crash_note) {
  cml::test::CrashNote note(crash_note);
  return cml::test::record_calls(release);
}
std::string threw_text(const Released& r) { return r.threw.empty() ? "" : " (it failed: " + r.threw + ")"; }

// Round trips of every size through a fresh Buffer (Pinned or Registered): each copy must
// return at once (queued behind a closed gate, as only a copy from page-locked memory can)
// and bring the data back exact. `still_pageable` is what a copy that waited means. Once
// one size has waited, the later ones are not gated: each wait costs the gate's whole
// limit, and one is the verdict.
template <class Buffer>
void check_async_round_trips(unsigned seed_offset, const char* still_pageable) {
  cml::test::device();
  const unsigned seed = std::random_device{}();
  CAPTURE(seed);
  bool gated = true;
  for (const std::size_t n : trip_sizes(seed)) {
    CAPTURE(n);
    Buffer buf(n);
    const Trip t = async_round_trip(buf.data(), n, seed + seed_offset, gated);
    if (gated) {
      INFO(still_pageable);
      CHECK(t.returned_early);
      gated = t.returned_early;
    }
    INFO(t.result.describe());
    CHECK(t.result.ok);
  }
}

// The kinds of memory the traced copies of one direction came from or went to.
std::string kinds_of(const std::vector<cml::trace::CopyRecord>& copies, bool source) {
  std::string out;
  for (const auto& c : copies)
    out += std::string(out.empty() ? "" : ", ") + cml::trace::to_string(source ? c.src : c.dst);
  return out.empty() ? "(no copy)" : out;
}

}  // namespace
