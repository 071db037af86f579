// An in-process recorder of CUDA runtime API calls (CUPTI's callback API): which calls a
// piece of code made, with the arguments that matter to the chapters — the stream, the
// pointer, the size, attach flags, advice, the memory location. Activity records (trace.hpp)
// say what the GPU did; these say what the program asked for, e.g. that a buffer was
// attached to the right stream with cudaMemAttachSingle.
//
// CUPTI allows one callback subscriber per process, and none under compute-sanitizer or
// ncu: a recorder that could not subscribe says so (ok == false), and its empty list is
// never evidence that a call was not made.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <map>
#include <string>
#include <thread>
#include <vector>

namespace cml::api {

struct Call {
  std::string name;       // "cudaStreamAttachMemAsync", "cudaMemPrefetchAsync", ...
  std::thread::id thread;  // the host thread that made it
  cudaStream_t stream = nullptr;  // for calls that take a stream
  const void* ptr = nullptr;      // the memory a call is about
  std::size_t bytes = 0;          // its length (attach: 0 means the whole allocation)
  unsigned flags = 0;             // cudaStreamAttachMemAsync's flags
  int advice = 0;                 // cudaMemAdvise's advice (a cudaMemoryAdvise)
  cudaMemLocation location{};     // cudaMemPrefetchAsync's / cudaMemAdvise's location
};

struct Calls {
  bool ok = false;
  std::string error;
  std::vector<Call> calls;   // in order; at most 10,000 of each name (a poll can make millions)
  std::map<std::string, std::size_t> counts;  // every call, by name, listed or not
  std::size_t not_listed = 0;                 // calls past that limit
  std::vector<Call> named(const std::string& name) const;
};

// Records from construction to stop(). One at a time per process.
class Recorder {
 public:
  Recorder();
  Recorder(const Recorder&) = delete;
  Recorder& operator=(const Recorder&) = delete;
  ~Recorder();
  Calls stop();

 private:
  bool active_ = false;
  std::string error_;
};

}  // namespace cml::api
