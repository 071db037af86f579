// What the chapters' tests read from the CUPTI callback recorder (cml/api_trace.hpp): which
// calls make the host wait, and which of them a piece of code made. (The note that names
// the likely cause when the code under test crashes the process is crash_note_guard.hpp's; it
// comes with this header, as it always has.)
#pragma once

#include "catch.hpp"
#include "crash_note_guard.hpp"

#include "cml/api_trace.hpp"

#include <algorithm>
#include <cstring>
#include <exception>
#include <string>
#include <utility>
#include <vector>

// A failed callback recording is never evidence that a call was not made.
#define CML_REQUIRE_API_OK(calls)                                                                            \
  do {                                                                                                       \
    if (!(calls).ok) FAIL("CUPTI's callback API failed, so the calls cannot be checked: " << (calls).error); \
  } while (0)

namespace cml::test {

// The runtime name without its per-thread-stream suffix ("cudaMemcpyAsync_ptsz" -> "cudaMemcpyAsync").
inline std::string base_name(const std::string& name) {
  for (const char* suffix : {"_ptsz", "_ptds"}) {
    const std::size_t n = std::strlen(suffix);
    if (name.size() > n && name.compare(name.size() - n, n, suffix) == 0) return name.substr(0, name.size() - n);
  }
  return name;
}

// Calls that can make the host wait for the GPU, or that synchronise the device
// implicitly: waits and polls (a loop of cudaStreamQuery is a wait), synchronous copies
// and memsets, and allocation calls that synchronise.
inline bool is_blocking_call(const std::string& full_name) {
  const std::string name = base_name(full_name);
  for (const char* b : {"cudaDeviceSynchronize",
                        "cudaStreamSynchronize",
                        "cudaEventSynchronize",
                        "cudaStreamQuery",
                        "cudaEventQuery",
                        "cudaThreadSynchronize",
                        "cudaMemcpy",
                        "cudaMemcpy2D",
                        "cudaMemcpy3D",
                        "cudaMemcpyToSymbol",
                        "cudaMemcpyFromSymbol",
                        "cudaMemcpyPeer",
                        "cudaMemset",
                        "cudaMemset2D",
                        "cudaMemset3D",
                        "cudaFree",
                        "cudaFreeHost",
                        "cudaFreeArray",
                        "cudaMalloc",
                        "cudaMallocHost",
                        "cudaHostAlloc",
                        "cudaMallocManaged",
                        "cudaHostRegister",
                        "cudaHostUnregister",
                        "cudaDeviceReset"})
    if (name == b) return true;
  return false;
}

// How many calls of `name` (either variant) were made, listed in `calls` or not.
inline int count_calls(const cml::api::Calls& calls, const std::string& name) {
  std::size_t n = 0;
  for (const auto& [full, count] : calls.counts) n += base_name(full) == name ? count : 0;
  return static_cast<int>(n);
}

// The blocking calls in `calls`, "cudaStreamSynchronize x3, cudaMemcpy" ("" when none), in
// the order each was first made.
inline std::string blocking_calls(const cml::api::Calls& calls) {
  std::vector<std::string> order;
  for (const auto& c : calls.calls) {
    const std::string name = base_name(c.name);
    if (is_blocking_call(name) && std::find(order.begin(), order.end(), name) == order.end()) order.push_back(name);
  }
  std::string out;
  for (const auto& name : order) {
    const int n = count_calls(calls, name);
    out += (out.empty() ? "" : ", ") + name + (n > 1 ? " x" + std::to_string(n) : "");
  }
  return out;
}

// The launches of the kernel whose (mangled) name contains `kernel`, in order: their stream
// and, where the recorder was asked for them (cml::api::KernelPointers), their first pointer
// parameters.
inline std::vector<cml::api::Call> kernel_launches(const cml::api::Calls& calls, const std::string& kernel) {
  std::vector<cml::api::Call> out;
  for (const auto& c : calls.calls)
    if (base_name(c.name).rfind("cudaLaunchKernel", 0) == 0 && c.symbol.find(kernel) != std::string::npos)
      out.push_back(c);
  return out;
}

// What `call` did, as the callback recorder saw it, and what it threw ("" when nothing): a
// call that fails is still a call whose calls a test can name.
struct Recorded {
  cml::api::Calls calls;
  std::string threw;
};
template <class Call>
Recorded record_calls(Call&& call) {
  Recorded r;
  cml::api::Recorder api;
  try {
    call();
  } catch (const std::exception& e) {
    r.threw = e.what();
  }
  r.calls = api.stop();
  return r;
}

}  // namespace cml::test
