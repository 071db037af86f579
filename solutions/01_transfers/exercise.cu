// Chapter 01 — host<->device transfers. The solution of chapters/01_transfers/exercise.cu.
//
//   ./lab run 01 --solution      run the chapter program with this file
//   ./lab diff 01                your exercise.cu against this one
#include "transfers.cuh"

#include "cml/errors.hpp"

#include <algorithm>
#include <cstring>

namespace ch01 {

// Step 1: cudaMallocHost page-locks the memory, so the copy engine reads it by DMA
// directly; pageable memory is first copied by the driver into a pinned bounce buffer.
void* allocate_pinned(std::size_t bytes) {
  void* p = nullptr;
  CUDA_CHECK(cudaMallocHost(&p, bytes));
  return p;
}

void free_pinned(void* p) { CUDA_CHECK(cudaFreeHost(p)); }

// Step 2: cudaHostRegister pins pages the program already owns. Registering is a heavy
// call (the OS locks every page): do it once for a buffer that is copied many times.
void pin_existing(void* p, std::size_t bytes) {
  CUDA_CHECK(cudaHostRegister(p, bytes, cudaHostRegisterDefault));
}

void unpin_existing(void* p) { CUDA_CHECK(cudaHostUnregister(p)); }

// Step 3: pack, copy once, unpack on the GPU. The packing is split into chunks and each
// chunk's copy is issued as soon as it is packed, so the copy engine moves chunk k while
// the CPU packs chunk k+1: the copy hides behind the packing instead of following it.
void send_batched(const PieceBatch& batch, const Staging& staging, cudaStream_t stream) {
  const std::size_t total = batch.count * batch.piece_bytes;
  if (total == 0) return;
  // About 1 MiB per copy: large enough that the per-call cost is small against the
  // transfer, small enough that the first copy starts early.
  const std::size_t per_chunk = std::max<std::size_t>(1, (std::size_t{1} << 20) / batch.piece_bytes);
  for (std::size_t first = 0; first < batch.count; first += per_chunk) {
    const std::size_t last = std::min(batch.count, first + per_chunk);
    for (std::size_t i = first; i < last; ++i)
      std::memcpy(staging.host + i * batch.piece_bytes, batch.host_base + batch.host_offsets[i],
                  batch.piece_bytes);
    const std::size_t offset = first * batch.piece_bytes;
    CUDA_CHECK(cudaMemcpyAsync(staging.device + offset, staging.host + offset,
                               (last - first) * batch.piece_bytes, cudaMemcpyHostToDevice, stream));
  }
  launch_unpack(staging.device, batch, stream);
}

// Step 4: mapped pinned memory. The kernel's loads travel over PCIe to host memory, so
// there is nothing to copy beforehand, and nothing to free on the device.
ZeroCopy allocate_zero_copy(std::size_t bytes) {
  ZeroCopy buffer;
  buffer.bytes = bytes;
  CUDA_CHECK(cudaHostAlloc(&buffer.host, bytes, cudaHostAllocMapped));
  CUDA_CHECK(cudaHostGetDevicePointer(&buffer.device, buffer.host, 0));
  return buffer;
}

// Nothing to do: the kernel reads the host's bytes where they are. Stream order already
// guarantees the kernel starts after what the host did before launching it.
void prepare_for_device([[maybe_unused]] const ZeroCopy& buffer,
                        [[maybe_unused]] cudaStream_t stream) {}

void free_zero_copy(ZeroCopy& buffer) {
  CUDA_CHECK(cudaFreeHost(buffer.host));
  buffer = ZeroCopy{};
}

}  // namespace ch01
