// A gate: a kernel that holds a stream shut until the host opens it, so a call made while
// the gate is closed can be caught waiting for the GPU — deterministically, with no
// guess at how long a "long" kernel must run. A call that waits for the stream (or the
// device) can only return once the gate gives up, after its limit; timed_out() then says
// the host waited. (Kernels must be loaded eagerly for this: tests/runner/main.cpp says why.)
#pragma once

#include <cuda_runtime_api.h>

#include <vector>

namespace cml::test {

class Gate {
 public:
  explicit Gate(double limit_s = 5.0);
  ~Gate();  // opens the gate and waits for its kernels
  Gate(const Gate&) = delete;
  Gate& operator=(const Gate&) = delete;

  // Enqueues a gate kernel on `stream`, a stream of the current device (any device: the
  // flags are mapped into every one): everything enqueued behind it waits for open().
  void close(cudaStream_t stream);
  // Lets every gate kernel end (without waiting for them).
  void open();
  // Whether a gate kernel gave up waiting (the host, or the device, waited for it).
  bool timed_out() const;
  // The gate kernel's name, as the trace shows it: left out of what a call enqueued.
  static const char* kernel_name();

 private:
  volatile int* flags_ = nullptr;  // [0]: open, [1]: a gate timed out (mapped host memory)
  std::vector<int> devices_;       // where gate kernels were launched, to wait for them
  unsigned long long limit_ns_;
};

}  // namespace cml::test
