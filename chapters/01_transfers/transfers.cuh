// Chapter 01 — host<->device transfers: the API that exercise.cu implements (the learner's
// part, steps 1-3) and the pieces the chapter provides around it (kernels, baselines).
// main.cu, the tests and the solution all include this file.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

namespace ch01 {

// ---- Step 1: page-locked (pinned) host memory, new or in place --------------------------
// A buffer of `bytes` bytes the copy engines can read and write directly by DMA: no staging
// through the driver's own pinned buffer, and copies with it are asynchronous. free_pinned
// releases it (it stays locked until then).
void* allocate_pinned(std::size_t bytes);
void free_pinned(void* p);
// Page-lock the existing host range [p, p + bytes) in place (no new buffer, no extra copy);
// unpin_existing undoes it: the range is pageable again and the program still owns it.
void pin_existing(void* p, std::size_t bytes);
void unpin_existing(void* p);

// ---- Step 2: batch many small transfers into one ---------------------------------------
// `count` pieces of `piece_bytes` each. Piece i starts at host_base + host_offsets[i] and
// must land at device_base + device_offsets[i]. The host array lies in pinned memory, so
// the one-by-one baselines get their best case: the difference is the cost per call.
struct PieceBatch {
  const std::byte* host_base = nullptr;
  const std::size_t* host_offsets = nullptr;  // host array, count entries
  std::size_t count = 0;
  std::size_t piece_bytes = 0;
  std::byte* device_base = nullptr;
  const std::size_t* device_offsets = nullptr;       // device array (for the unpack kernel)
  const std::size_t* device_offsets_host = nullptr;  // the same offsets, host copy
};

// A pinned host buffer and a device buffer of `bytes` each (>= count * piece_bytes), for
// packing the pieces contiguously.
struct Staging {
  std::byte* host = nullptr;
  std::byte* device = nullptr;
  std::size_t bytes = 0;
};

// The learner's batched send: enqueue on `stream` everything that makes every piece arrive
// at its device offset. Only enqueues: nothing waits for the GPU; the caller synchronises.
// `staging` may be used freely (its previous contents are not needed). The pieces cross the
// bus in the copies: the kernel that scatters them reads device memory (launch_unpack's
// `packed`), not pinned host memory over the bus.
void send_batched(const PieceBatch& batch, const Staging& staging, cudaStream_t stream);

// Provided: scatter `count` packed pieces from `packed` (device) to their device offsets.
void launch_unpack(const std::byte* packed, const PieceBatch& batch, cudaStream_t stream);

// ---- Step 3: zero-copy (mapped pinned memory) ----------------------------------------
// A host buffer the GPU reads over the bus, with no copy: `host` for the CPU, `device` for
// kernels (the same bytes), and no device allocation. free_zero_copy releases all of it.
struct ZeroCopy {
  void* host = nullptr;
  void* device = nullptr;
  std::size_t bytes = 0;
};
ZeroCopy allocate_zero_copy(std::size_t bytes);
// Whatever must happen, after the host wrote `host`, before a kernel on `stream` reads
// `device`; it only enqueues (never waits for the GPU). With zero-copy that is nothing.
void prepare_for_device(const ZeroCopy& buffer, cudaStream_t stream);
void free_zero_copy(ZeroCopy& buffer);

// ---- Provided by the chapter (provided.cu) ---------------------------------------------

// The baselines step 2 is measured against: one cudaMemcpy per piece (each waits for the
// copy), or one cudaMemcpyAsync per piece back to back.
void send_one_by_one(const PieceBatch& batch, cudaStream_t stream, bool synchronous);
// CUDA's own batching: one cudaMemcpyBatchAsync call for all pieces.
void send_memcpy_batch(const PieceBatch& batch, cudaStream_t stream);

// Adds words[0], words[stride], words[2 * stride], ... (below n) into *sum, exactly (64-bit
// integer accumulation). `words` may be device or mapped host memory. stride 1 reads every
// word once; a large stride reads a sparse sample, as a lookup into a big table would.
void launch_sum(const std::uint32_t* words, std::size_t n, std::size_t stride, unsigned long long* sum,
                cudaStream_t stream);

}  // namespace ch01
