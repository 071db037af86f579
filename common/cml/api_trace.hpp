// An in-process recorder of CUDA runtime API calls (CUPTI's callback API): which calls a
// piece of code made, with the arguments that matter to the chapters — the stream, the
// pointer, the size, attach flags, advice, the memory location. Activity records (trace.hpp)
// say what the GPU did; these say what the program asked for, e.g. that a buffer was
// attached to the right stream with cudaMemAttachSingle.
//
// CUPTI allows one callback subscriber per process, and none under compute-sanitizer or
// ncu: a recorder that could not subscribe says so (ok == false), and its empty list is
// never evidence that a call was not made.
//
// A test can also put its own entries in the list, in order with the calls (mark): e.g.
// "after_chunk" each time a callback of the code under test runs, so that the calls the
// code made before and after it can be told apart. And it can ask for the pointers a
// kernel was launched with (Recorder's `pointers`): what a kernel reads and writes, which
// the activity trace does not say.
#pragma once

#include "cml/trace.hpp"

#include <cuda_runtime_api.h>

#include <array>
#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <thread>
#include <vector>

namespace cml::api {

// The name of a test's own entry (mark): Call::symbol holds its text.
inline constexpr const char* kMark = "cml::api::mark";

struct Call {
  std::string name;                       // "cudaStreamAttachMemAsync", "cudaMemPrefetchAsync", ... or kMark
  std::thread::id thread;                 // the host thread that made it
  std::uint64_t entered_ns = 0;           // when it was entered and when it returned, on the clock of the
  std::uint64_t returned_ns = 0;          // activity trace's records (cuptiGetTimestamp); 0 where not known
  std::uint32_t correlation_id = 0;       // CUPTI's: the same as the activity records of what it enqueued
  cudaStream_t stream = nullptr;          // for calls that take a stream (kernel launches, copies, host functions too)
  const void* ptr = nullptr;              // the memory a call is about: a copy's destination, what is freed or
                                          // (un)registered, a host function's userData
  const void* src = nullptr;              // cudaMemcpyAsync's source
  std::size_t bytes = 0;                  // its length (attach: 0 means the whole allocation; a copy's count)
  unsigned flags = 0;                     // cudaStreamAttachMemAsync's / cudaHostRegister's flags
  int kind = 0;                           // cudaMemcpyAsync's cudaMemcpyKind
  int advice = 0;                         // cudaMemAdvise's advice (a cudaMemoryAdvise)
  cudaMemLocation location{};             // cudaMemPrefetchAsync's / cudaMemAdvise's location
  std::string symbol;                     // a kernel launch: the kernel's (mangled) name; a mark: its text
  const void* func = nullptr;             // a kernel launch: the kernel's host-side handle
  std::array<const void*, 4> pointers{};  // a kernel launch asked for in Recorder's `pointers`: its
                                          // first parameters' values, in order
  std::array<unsigned, 5> box{};          // cuTensorMapEncodeTiled (a driver call, the one recorded): the box's
                                          // elements per dimension, innermost first (0 past its rank); `ptr` is
                                          // the tensor's address and `bytes` one box's bytes
};

// Kernels whose pointers a recording keeps: those whose (mangled) name contains `name`,
// whose first `count` (at most 4) parameters are pointers. The test that asks knows the
// kernel's signature: a parameter that is not a pointer must not be asked for.
struct KernelPointers {
  std::string name;
  int count = 1;
};

struct Calls {
  bool ok = false;
  std::string error;
  std::vector<Call> calls;                    // in order; at most 10,000 of each name (a poll can make millions)
  std::map<std::string, std::size_t> counts;  // every call, by name, listed or not
  std::size_t not_listed = 0;                 // calls past that limit
  std::vector<Call> named(const std::string& name) const;
};

// Records from construction to stop(). One at a time per process. Of the driver API only
// cuTensorMapEncodeTiled is recorded, made directly or through the runtime's entry point:
// the boxes a TMA kernel's stages are made of.
class Recorder {
 public:
  explicit Recorder(std::vector<KernelPointers> pointers = {});
  Recorder(const Recorder&) = delete;
  Recorder& operator=(const Recorder&) = delete;
  ~Recorder();
  Calls stop();

 private:
  bool active_ = false;
  std::string error_;
};

// The calls that kept their thread inside CUDA for `min_ns` or longer (waits, synchronous
// copies, allocations that synchronise...), as host records of the activity trace: what a
// timeline draws as "the host was blocked". Measured, not judged by name.
std::vector<trace::HostRecord> long_calls(const Calls& calls, std::uint64_t min_ns = 20000);

// Adds an entry named kMark with `note` to the recording under way, in order with the
// calls (on whatever thread calls it); nothing when no recording is under way.
void mark(const std::string& note);

}  // namespace cml::api
