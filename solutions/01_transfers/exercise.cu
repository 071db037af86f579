// Chapter 01 — host<->device transfers. The solution of chapters/01_transfers/exercise.cu.
//
//   ./lab run 01 --solution      run the chapter program with this file
//   ./lab diff 01                your exercise.cu against this one
#include "transfers.cuh"

#include "cml/errors.hpp"
#include "cml/host_pool.hpp"

#include <algorithm>
#include <cstring>

// Marks this translation unit as the solution: the learner's tests fail when it is linked
// into the learner's build (an exercise.cu that includes or copies this file).
extern "C" const int cml_ch01_solution_tu = 1;

namespace ch01 {

// Step 1: cudaMallocHost page-locks the memory, so the copy engine reads it by DMA
// directly; pageable memory is first copied by the driver into a pinned bounce buffer.
// The pages stay locked until cudaFreeHost: free() on them is undefined (they did not come
// from malloc), and cudaFree refuses them (they are not device memory).
void* allocate_pinned(std::size_t bytes) {
  void* p = nullptr;
  CUDA_CHECK(cudaMallocHost(&p, bytes));
  return p;
}

void free_pinned(void* p) { CUDA_CHECK(cudaFreeHost(p)); }

// Step 1, in place: cudaHostRegister pins pages the program already owns. Registering is a heavy
// call (the OS locks every page): do it once for a buffer that is copied many times.
void pin_existing(void* p, std::size_t bytes) { CUDA_CHECK(cudaHostRegister(p, bytes, cudaHostRegisterDefault)); }

void unpin_existing(void* p) { CUDA_CHECK(cudaHostUnregister(p)); }

// Step 2: pack, copy, unpack on the GPU. Packing is a host memcpy, and one core copies
// far less than the bus carries (about 7 GB/s on the H200 machine, against 55 GB/s over
// PCIe: docs/01_transfers.md, "Step 2"); so the pieces are split among the threads of a
// pool that stays alive between calls (starting threads per call cost more than it saved),
// and each thread issues the copy of what it packed at once, about 1 MiB at a time, so the
// copy engine moves one part while the CPUs pack the next. The unpack kernel is launched
// after every copy was issued: stream order puts it after all of them.
namespace {

// Packs pieces [first, last) into their place in staging.host and sends them.
void pack_and_send(const PieceBatch& batch, const Staging& staging, cudaStream_t stream, std::size_t first,
                   std::size_t last) {
  const std::size_t per_copy = std::max<std::size_t>(1, (std::size_t{1} << 20) / batch.piece_bytes);
  for (std::size_t begin = first; begin < last; begin += per_copy) {
    const std::size_t end = std::min(last, begin + per_copy);
    for (std::size_t i = begin; i < end; ++i)
      std::memcpy(staging.host + i * batch.piece_bytes, batch.host_base + batch.host_offsets[i], batch.piece_bytes);
    const std::size_t offset = begin * batch.piece_bytes;
    CUDA_CHECK(cudaMemcpyAsync(staging.device + offset, staging.host + offset, (end - begin) * batch.piece_bytes,
                               cudaMemcpyHostToDevice, stream));
  }
}

}  // namespace

void send_batched(const PieceBatch& batch, const Staging& staging, cudaStream_t stream) {
  const std::size_t total = batch.count * batch.piece_bytes;
  if (total == 0) return;
  // Below 256 KiB one thread packs faster than it can hand the work out.
  cml::HostPool& pool = cml::host_pool();
  const std::size_t parts = total < (std::size_t{256} << 10) ? 1 : std::min(pool.width(), batch.count);
  const std::size_t per_part = (batch.count + parts - 1) / parts;
  pool.run(parts, [&](std::size_t p) {
    pack_and_send(batch, staging, stream, p * per_part, std::min(batch.count, (p + 1) * per_part));
  });
  launch_unpack(staging.device, batch, stream);
}

// Step 3: mapped pinned memory. The kernel's loads travel over PCIe to host memory, so
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
void prepare_for_device([[maybe_unused]] const ZeroCopy& buffer, [[maybe_unused]] cudaStream_t stream) {}

void free_zero_copy(ZeroCopy& buffer) {
  CUDA_CHECK(cudaFreeHost(buffer.host));
  buffer = ZeroCopy{};
}

}  // namespace ch01
