// Chapter 01 — host<->device transfers. THE file you edit: three steps, TODO(1) to TODO(3).
// Each function below runs as shipped, but the slow way; make it fast the way the step says.
//
//   ./lab run 01          build and run the chapter program with your code
//   ./lab check 01        run the chapter's tests: which steps pass, and what to look at
//   ./lab hint 01         one more hint (chapters/01_transfers/hints.md)
//
// Every function is declared, with what it must do, in transfers.cuh.
#include "transfers.cuh"

#include "cml/errors.hpp"

#include <cstdlib>
#include <new>

namespace ch01 {

// TODO(1): host memory the copy engines read and write directly, so a copy from it needs no
// staging through a driver buffer and a cudaMemcpyAsync with it returns at once. Two ways
// to get it: a new buffer (allocate_pinned, released by free_pinned) and a buffer the
// program already has, made so in place with no new buffer and no copy (pin_existing,
// undone by unpin_existing: afterwards it is ordinary memory again). Whatever you lock,
// you unlock with the call that matches how you locked it.
// As shipped, every buffer is pageable and pinning does nothing.
void* allocate_pinned(std::size_t bytes) {
  void* p = std::malloc(bytes);
  if (p == nullptr) throw std::bad_alloc();
  return p;
}

void free_pinned(void* p) { std::free(p); }

void pin_existing([[maybe_unused]] void* p, [[maybe_unused]] std::size_t bytes) {}

void unpin_existing([[maybe_unused]] void* p) {}

// TODO(2): every piece must arrive at its device offset, and the host pays the fixed cost
// of a copy call (microseconds, whatever the size) as few times as it can: not once per
// piece. You have a pinned host staging buffer and a device staging buffer (at least the
// pieces' size), and launch_unpack scatters packed pieces on the GPU from device memory:
// the pieces cross the bus in copies, never as a kernel's loads over the bus. Everything is
// enqueued on `stream`, nothing waits for the GPU, and the caller synchronises. As shipped,
// it makes one copy per piece.
void send_batched(const PieceBatch& batch, [[maybe_unused]] const Staging& staging, cudaStream_t stream) {
  for (std::size_t i = 0; i < batch.count; ++i)
    CUDA_CHECK(cudaMemcpyAsync(batch.device_base + batch.device_offsets_host[i],
                               batch.host_base + batch.host_offsets[i], batch.piece_bytes, cudaMemcpyHostToDevice,
                               stream));
}

// TODO(3): zero-copy: a kernel reads the host's bytes where they are, over the bus, so
// nothing is copied before it runs and nothing is allocated on the device. Decide what
// allocate_zero_copy must give the host and the device, what prepare_for_device still has
// to do (it only enqueues), and what free_zero_copy releases.
// As shipped, the data lives twice (host and device) and is copied before every use.
ZeroCopy allocate_zero_copy(std::size_t bytes) {
  ZeroCopy buffer;
  buffer.bytes = bytes;
  buffer.host = std::malloc(bytes);
  if (buffer.host == nullptr) throw std::bad_alloc();
  CUDA_CHECK(cudaMalloc(&buffer.device, bytes));
  return buffer;
}

void prepare_for_device(const ZeroCopy& buffer, cudaStream_t stream) {
  CUDA_CHECK(cudaMemcpyAsync(buffer.device, buffer.host, buffer.bytes, cudaMemcpyHostToDevice, stream));
}

void free_zero_copy(ZeroCopy& buffer) {
  std::free(buffer.host);
  CUDA_CHECK(cudaFree(buffer.device));
  buffer = ZeroCopy{};
}

}  // namespace ch01
