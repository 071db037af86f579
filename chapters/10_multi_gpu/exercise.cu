// Chapter 10 — moving data between GPUs. THE file you edit: four steps, TODO(1) to TODO(4).
// Each function below runs as shipped, but the slow way: through the host, waiting at every
// turn. Make it fast the way the step says. The chapter needs two GPUs or more.
//
//   ./lab run 10          build and run the chapter program with your code
//   ./lab check 10        run the chapter's tests: which steps pass, and what to look at
//   ./lab hint 10         one more hint (chapters/10_multi_gpu/hints.md)
//
// Every function is declared, with what it must do, in multi_gpu.cuh.
#include "multi_gpu.cuh"

#include "cml/errors.hpp"

#include <algorithm>
#include <stdexcept>
#include <utility>
#include <vector>

namespace ch10 {

// ---- Step 1 -----------------------------------------------------------------------------

// TODO(1): let each GPU use the others' memory directly, wherever the hardware allows it,
// for every ordered pair, and record which pairs you enabled. It is a setting of a device
// that lasts: a second call must find it done and leave no error behind. As shipped,
// nothing is enabled, so every copy below goes through the host.
PeerMatrix enable_peer_access(const int* devices, int count) {
  if (count < 0 || count > kMaxDevices) throw std::invalid_argument("enable_peer_access: 0 to 8 devices");
  PeerMatrix m;
  m.count = count;
  std::copy(devices, devices + count, m.devices);
  return m;
}

// TODO(1): the copy takes the shortest path the matrix allows: straight from one device's
// memory to the other's, or, where the two cannot reach each other, through the pinned
// staging buffer. It reads src only after the work already queued on the source's stream,
// and that stream's later work may overwrite src once the copy has read it; work queued
// later on the destination's stream sees the bytes; the staging buffer is free again once
// the destination's stream is past the copy. The host waits for neither GPU. As shipped,
// it always goes through the host and blocks the calling thread twice.
Path copy_between(void* dst, const void* src, std::size_t bytes, const Link& link,
                  [[maybe_unused]] const PeerMatrix& peers) {
  if (bytes > link.staging_bytes)
    throw std::invalid_argument("copy_between: the staging buffer is smaller than the copy");
  if (bytes == 0) return Path::ThroughHost;
  {
    const OnDevice on(link.src_device);
    CUDA_CHECK(cudaStreamSynchronize(link.src_stream));  // src must be ready
    CUDA_CHECK(cudaMemcpy(link.staging, src, bytes, cudaMemcpyDeviceToHost));
  }
  const OnDevice on(link.dst_device);
  CUDA_CHECK(cudaMemcpy(dst, link.staging, bytes, cudaMemcpyHostToDevice));
  return Path::ThroughHost;
}

// ---- Step 2 -----------------------------------------------------------------------------

namespace {

// As shipped: one float per thread, from a local copy of `remote`.
__global__ void add_from_peer_kernel(float* local, const float* other, std::size_t n) {
  const std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x;
  if (i < n) local[i] += other[i];
}

}  // namespace

// TODO(2): one kernel that reads `remote` where it lies, on the other GPU, with loads that
// carry whole sectors over the link and enough of them in flight to fill it: no copy, no
// temporary buffer, no wait. Any n, and any start of `local` and `remote` (neither need be
// 16-byte aligned, nor aligned alike); nothing outside [0, n) is touched. As shipped, it
// copies `remote` into a new buffer first, waits for the copy, and adds one float per
// thread.
void add_from_peer(float* local, const float* remote, std::size_t n, int device, cudaStream_t stream) {
  if (n == 0) return;
  const OnDevice on(device);
  float* copy = nullptr;
  CUDA_CHECK(cudaMalloc(&copy, n * sizeof(float)));
  cudaPointerAttributes attr{};
  CUDA_CHECK(cudaPointerGetAttributes(&attr, remote));
  CUDA_CHECK(cudaMemcpyPeerAsync(copy, device, remote, attr.device, n * sizeof(float), stream));
  add_from_peer_kernel<<<static_cast<unsigned>((n + 255) / 256), 256, 0, stream>>>(local, copy, n);
  CUDA_CHECK_LAUNCH();
  CUDA_CHECK(cudaStreamSynchronize(stream));
  CUDA_CHECK(cudaFree(copy));
}

// ---- Step 3 -----------------------------------------------------------------------------

// TODO(3): each sweep's edge rows must reach the neighbours' halos while the inner rows are
// still being computed, and nothing may block the host: every ordering between bands is
// made on the GPU, and no call waits for a GPU. Each band has two streams and two events
// for that. Think about
// what each copy overwrites, and who reads it, one sweep before and one sweep after. As
// shipped, each sweep computes every band, waits for all of them, then copies the halos
// through calls that block.
void run_jacobi(Slab* slabs, int count, int cols, int iterations, [[maybe_unused]] const PeerMatrix& peers) {
  const std::size_t row_bytes = static_cast<std::size_t>(cols) * sizeof(float);
  const auto row = [cols](float* band, int r) { return band + static_cast<std::size_t>(r) * cols; };
  for (int it = 0; it < iterations; ++it) {
    for (int d = 0; d < count; ++d) {
      const OnDevice on(slabs[d].device);
      launch_jacobi_rows(slabs[d].cur, slabs[d].next, cols, 1, slabs[d].rows, slabs[d].compute);
      CUDA_CHECK(cudaStreamSynchronize(slabs[d].compute));
    }
    for (int d = 0; d + 1 < count; ++d) {
      Slab& up = slabs[d];
      Slab& down = slabs[d + 1];
      const OnDevice on(up.device);
      CUDA_CHECK(
          cudaMemcpyPeerAsync(row(down.next, 0), down.device, row(up.next, up.rows), up.device, row_bytes, up.compute));
      CUDA_CHECK(cudaMemcpyPeerAsync(row(up.next, up.rows + 1), up.device, row(down.next, 1), down.device, row_bytes,
                                     up.compute));
      CUDA_CHECK(cudaStreamSynchronize(up.compute));
    }
    for (int d = 0; d < count; ++d) std::swap(slabs[d].cur, slabs[d].next);
  }
}

// ---- Step 4 -----------------------------------------------------------------------------

// TODO(4): a ring, where each step every rank works at once on a different chunk with the
// rank before it, over the links between them: first the sums of the chunks, then the
// summed chunks passed round. The ranks are ordered by events alone, and each step's
// waits must see the step before, not the one being enqueued. Your step 2 is the tool for
// half of it. As shipped, every rank's data goes to the host, is summed there, and goes
// back, with the host waiting at every copy.
void ring_all_reduce(Rank* ranks, int count, std::size_t n, [[maybe_unused]] const PeerMatrix& peers) {
  std::vector<float> sum(n, 0.0f), part(n);
  for (int r = 0; r < count; ++r) {
    const OnDevice on(ranks[r].device);
    CUDA_CHECK(cudaStreamSynchronize(ranks[r].stream));
    CUDA_CHECK(cudaMemcpy(part.data(), ranks[r].data, n * sizeof(float), cudaMemcpyDeviceToHost));
    for (std::size_t i = 0; i < n; ++i) sum[i] += part[i];
  }
  for (int r = 0; r < count; ++r) {
    const OnDevice on(ranks[r].device);
    CUDA_CHECK(cudaMemcpy(ranks[r].data, sum.data(), n * sizeof(float), cudaMemcpyHostToDevice));
    CUDA_CHECK(cudaDeviceSynchronize());  // a copy from pageable memory may return before it lands
  }
}

}  // namespace ch10
