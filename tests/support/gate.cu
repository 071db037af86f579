// See gate.hpp.
#include "gate.hpp"

#include "cml/errors.hpp"

namespace cml::test {

namespace {

__device__ unsigned long long now_ns() {
  unsigned long long t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

// One thread spins on the host's flag (mapped memory: each read crosses the bus, so it
// sleeps between reads) until it opens or the limit passes.
__global__ void cml_gate_kernel(volatile int* flags, unsigned long long limit_ns) {
  const unsigned long long start = now_ns();
  while (flags[0] == 0) {
    if (now_ns() - start > limit_ns) {
      flags[1] = 1;
      return;
    }
    __nanosleep(2000);
  }
}

}  // namespace

Gate::Gate(double limit_s) : limit_ns_(static_cast<unsigned long long>(limit_s * 1e9)) {
  void* p = nullptr;
  // Portable: mapped into every device's context, so a gate can hold any device's stream.
  CUDA_CHECK(cudaHostAlloc(&p, 2 * sizeof(int), cudaHostAllocMapped | cudaHostAllocPortable));
  flags_ = static_cast<volatile int*>(p);
  flags_[0] = 0;
  flags_[1] = 0;
}

Gate::~Gate() {
  open();
  int current = 0;
  detail::warn_on_error(cudaGetDevice(&current), "cudaGetDevice (gate)");
  for (int d : devices_) {
    detail::warn_on_error(cudaSetDevice(d), "cudaSetDevice (gate)");
    detail::warn_on_error(cudaDeviceSynchronize(), "waiting for the gate kernels");
  }
  detail::warn_on_error(cudaSetDevice(current), "cudaSetDevice (gate)");
  detail::warn_on_error(cudaFreeHost(const_cast<int*>(flags_)), "cudaFreeHost (gate flags)");
}

void Gate::close(cudaStream_t stream) {
  flags_[0] = 0;
  int device = 0;
  CUDA_CHECK(cudaGetDevice(&device));
  if (devices_.empty() || devices_.back() != device) devices_.push_back(device);
  void* d = nullptr;  // the flags as this device sees them
  CUDA_CHECK(cudaHostGetDevicePointer(&d, const_cast<int*>(flags_), 0));
  cml_gate_kernel<<<1, 1, 0, stream>>>(static_cast<volatile int*>(d), limit_ns_);
  CUDA_CHECK_LAUNCH();
}

void Gate::open() { flags_[0] = 1; }

bool Gate::timed_out() const { return flags_[1] != 0; }

const char* Gate::kernel_name() { return "cml_gate_kernel"; }

}  // namespace cml::test
