// Chapter 01 — host<->device transfers. THE file you edit: four steps, TODO(1) to TODO(4).
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

// TODO(1): allocate page-locked host memory, so the copy engines can read it directly
// (cudaMallocHost or cudaHostAlloc), and free it with the matching call. Plain malloc
// gives pageable memory: every copy from it is staged through a driver buffer first.
void* allocate_pinned(std::size_t bytes) {
  void* p = std::malloc(bytes);
  if (p == nullptr) throw std::bad_alloc();
  return p;
}

void free_pinned(void* p) { std::free(p); }

// TODO(2): page-lock the existing range [p, p + bytes) in place, and undo it in
// unpin_existing. No new buffer, no extra copy: the memory the program already has
// becomes as fast to copy from as step 1's.
void pin_existing([[maybe_unused]] void* p, [[maybe_unused]] std::size_t bytes) {}

void unpin_existing([[maybe_unused]] void* p) {}

// TODO(3): send all pieces with ONE host-to-device copy: pack them one after the other
// into staging.host (pinned), copy the packed bytes to staging.device once, then scatter
// them on the GPU with launch_unpack(staging.device, batch, stream). Each copy call costs
// microseconds of fixed overhead whatever its size; as shipped, this pays it per piece.
void send_batched(const PieceBatch& batch, [[maybe_unused]] const Staging& staging,
                  cudaStream_t stream) {
  for (std::size_t i = 0; i < batch.count; ++i)
    CUDA_CHECK(cudaMemcpyAsync(batch.device_base + batch.device_offsets_host[i],
                               batch.host_base + batch.host_offsets[i], batch.piece_bytes,
                               cudaMemcpyHostToDevice, stream));
}

// TODO(4): zero-copy. Allocate mapped pinned memory (cudaHostAlloc with
// cudaHostAllocMapped) and get the device's view of it (cudaHostGetDevicePointer): a kernel
// then reads the host's bytes over the bus, and prepare_for_device has nothing to copy.
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
