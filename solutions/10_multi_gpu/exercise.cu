// Chapter 10 — moving data between GPUs. THE file you edit: four steps, TODO(1) to TODO(4).
// (The solution: every step done, with why.)
//
//   ./lab run 10          build and run the chapter program with your code (two GPUs or more)
//   ./lab check 10        run the chapter's tests: which steps pass, and what to look at
//   ./lab hint 10         one more hint (chapters/10_multi_gpu/hints.md)
//
// Every function is declared, with what it must do, in multi_gpu.cuh.
#include "multi_gpu.cuh"

#include "cml/errors.hpp"

#include <algorithm>
#include <cstdint>
#include <stdexcept>
#include <utility>

// The solution's marker: the tests refuse a learner's build that contains this file.
extern "C" const int cml_ch10_solution_tu = 1;

namespace ch10 {

// ---- Step 1 -----------------------------------------------------------------------------

PeerMatrix enable_peer_access(const int* devices, int count) {
  if (count < 0 || count > kMaxDevices) throw std::invalid_argument("enable_peer_access: 0 to 8 devices");
  PeerMatrix m;
  m.count = count;
  std::copy(devices, devices + count, m.devices);
  for (int i = 0; i < count; ++i) {
    const OnDevice on(devices[i]);  // access is enabled for the current device's context
    for (int j = 0; j < count; ++j) {
      if (i == j) continue;
      int can = 0;
      CUDA_CHECK(cudaDeviceCanAccessPeer(&can, devices[i], devices[j]));
      if (!can) continue;
      // Enabled once per context and kept: a second call answers "already enabled", which is
      // no failure, and must not stay behind as the thread's last error.
      const cudaError_t e = cudaDeviceEnablePeerAccess(devices[j], 0);
      if (e == cudaErrorPeerAccessAlreadyEnabled)
        (void)cudaGetLastError();
      else
        CUDA_CHECK(e);
      m.enabled[i][j] = true;
    }
  }
  return m;
}

Path copy_between(void* dst, const void* src, std::size_t bytes, const Link& link, const PeerMatrix& peers) {
  const bool peer = peers.reaches(link.src_device, link.dst_device) || peers.reaches(link.dst_device, link.src_device);
  if (!peer && bytes > link.staging_bytes)
    throw std::invalid_argument("copy_between: the staging buffer is smaller than the copy");
  {
    // On the source's stream: one device-to-device copy over the link, or the first half of
    // the trip, into pinned host memory, which the copy engine reads and writes by DMA.
    const OnDevice on(link.src_device);
    if (bytes > 0) {
      if (peer)
        CUDA_CHECK(cudaMemcpyPeerAsync(dst, link.dst_device, src, link.src_device, bytes, link.src_stream));
      else
        CUDA_CHECK(cudaMemcpyAsync(link.staging, src, bytes, cudaMemcpyDeviceToHost, link.src_stream));
    }
    CUDA_CHECK(cudaEventRecord(link.sent, link.src_stream));
  }
  // The destination's stream waits for the source's, on the GPU: the host never does.
  const OnDevice on(link.dst_device);
  CUDA_CHECK(cudaStreamWaitEvent(link.dst_stream, link.sent, 0));
  if (!peer && bytes > 0)
    CUDA_CHECK(cudaMemcpyAsync(dst, link.staging, bytes, cudaMemcpyHostToDevice, link.dst_stream));
  return peer ? Path::Peer : Path::ThroughHost;
}

// ---- Step 2 -----------------------------------------------------------------------------

namespace {

constexpr int kThreads = 256;

// Grid-stride over 16-byte groups: each warp's loads of `remote` are 512 consecutive bytes,
// so every request over the link carries whole 32-byte sectors, and four floats come per
// load. The `head` floats before the first 16-byte boundary, and the last few, go one by
// one (head is n where local and remote are not aligned alike: then every float does).
__global__ void add_from_peer_kernel(float* __restrict__ local, const float* __restrict__ remote, std::size_t n,
                                     std::size_t head) {
  const std::size_t stride = static_cast<std::size_t>(gridDim.x) * blockDim.x;
  const std::size_t first = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x;
  if (head == n) {  // no 16-byte groups: float by float
    for (std::size_t i = first; i < n; i += stride) local[i] += remote[i];
    return;
  }
  if (first < head) local[first] += remote[first];  // at most 3
  const std::size_t groups = (n - head) / 4;
  float4* l4 = reinterpret_cast<float4*>(local + head);
  const float4* r4 = reinterpret_cast<const float4*>(remote + head);
  for (std::size_t g = first; g < groups; g += stride) {
    const float4 r = r4[g];
    float4 l = l4[g];
    l.x += r.x;
    l.y += r.y;
    l.z += r.z;
    l.w += r.w;
    l4[g] = l;
  }
  for (std::size_t i = head + groups * 4 + first; i < n; i += stride) local[i] += remote[i];
}

}  // namespace

void add_from_peer(float* local, const float* remote, std::size_t n, int device, cudaStream_t stream) {
  if (n == 0) return;
  const OnDevice on(device);  // a stream's kernels launch on its own device
  int sms = 0;
  CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device));
  // Enough blocks to keep many loads in flight over the link (its latency is a few
  // microseconds), no more than the work needs.
  const std::size_t want = (n / 4 + kThreads - 1) / kThreads + 1;
  const auto blocks = static_cast<unsigned>(std::min<std::size_t>(want, static_cast<std::size_t>(sms) * 8));
  // Floats before local's first 16-byte boundary; remote must be as far from its own.
  const auto misalign = [](const float* p) { return reinterpret_cast<std::uintptr_t>(p) % 16; };
  const std::size_t to_boundary = (16 - misalign(local)) % 16 / sizeof(float);
  const std::size_t head =
      misalign(local) == misalign(remote) && misalign(local) % sizeof(float) == 0 ? std::min(to_boundary, n) : n;
  add_from_peer_kernel<<<blocks, kThreads, 0, stream>>>(local, remote, n, head);
  CUDA_CHECK_LAUNCH();
}

// ---- Step 3 -----------------------------------------------------------------------------

void run_jacobi(Slab* slabs, int count, int cols, int iterations, const PeerMatrix& peers) {
  const std::size_t row_bytes = static_cast<std::size_t>(cols) * sizeof(float);
  const auto row = [cols](float* band, int r) { return band + static_cast<std::size_t>(r) * cols; };
  for (int d = 0; d + 1 < count; ++d)  // checked before anything is enqueued
    if (!peers.reaches(slabs[d].device, slabs[d + 1].device) || !peers.reaches(slabs[d + 1].device, slabs[d].device))
      throw std::invalid_argument("run_jacobi: neighbouring bands' devices without peer access both ways");
  for (int it = 0; it < iterations; ++it) {
    // First every band's edge rows, on its edges stream, each sent on to the neighbour's
    // halo in `next` as soon as it is computed. The stream waits for the last sweep of this
    // band and of both neighbours (their `done`): the edges read the halos the neighbours
    // sent last sweep, and the copies overwrite halos the neighbours read last sweep.
    for (int d = 0; d < count; ++d) {
      Slab& s = slabs[d];
      const OnDevice on(s.device);
      for (int n : {d - 1, d, d + 1})
        if (n >= 0 && n < count) CUDA_CHECK(cudaStreamWaitEvent(s.edges, slabs[n].done, 0));
      launch_jacobi_rows(s.cur, s.next, cols, 1, 1, s.edges);
      if (s.rows > 1) launch_jacobi_rows(s.cur, s.next, cols, s.rows, s.rows, s.edges);
      if (d > 0) {  // my top row is the upper neighbour's bottom halo
        const Slab& up = slabs[d - 1];
        CUDA_CHECK(
            cudaMemcpyPeerAsync(row(up.next, up.rows + 1), up.device, row(s.next, 1), s.device, row_bytes, s.edges));
      }
      if (d + 1 < count) {  // my bottom row is the lower neighbour's top halo
        const Slab& down = slabs[d + 1];
        CUDA_CHECK(
            cudaMemcpyPeerAsync(row(down.next, 0), down.device, row(s.next, s.rows), s.device, row_bytes, s.edges));
      }
      CUDA_CHECK(cudaEventRecord(s.edges_sent, s.edges));
    }
    // Then the inner rows, on the compute stream, while the edges travel. The sweep is done
    // for this band when its own edges are sent and both neighbours' edges have arrived in
    // its halos. (Recorded after every band's edges_sent above: each wait below sees this
    // sweep's record, and the waits above saw the last sweep's `done`.)
    for (int d = 0; d < count; ++d) {
      Slab& s = slabs[d];
      const OnDevice on(s.device);
      launch_jacobi_rows(s.cur, s.next, cols, 2, s.rows - 1, s.compute);
      for (int n : {d - 1, d, d + 1})
        if (n >= 0 && n < count) CUDA_CHECK(cudaStreamWaitEvent(s.compute, slabs[n].edges_sent, 0));
      CUDA_CHECK(cudaEventRecord(s.done, s.compute));
    }
    for (int d = 0; d < count; ++d) std::swap(slabs[d].cur, slabs[d].next);
  }
}

// ---- Step 4 -----------------------------------------------------------------------------

namespace {

// Chunk c of n over `count` ranks: [first, first + size).
std::pair<std::size_t, std::size_t> chunk(std::size_t n, int count, int c) {
  const std::size_t first = n * static_cast<std::size_t>(c) / static_cast<std::size_t>(count);
  const std::size_t last = n * static_cast<std::size_t>(c + 1) / static_cast<std::size_t>(count);
  return {first, last - first};
}

int wrap(int r, int count) { return ((r % count) + count) % count; }

// One ring step: every rank first waits for its left neighbour's previous step, then does
// its own part and records it. The two loops matter: had rank r recorded this step before
// rank r + 1 enqueued its wait, r + 1 would wait for r's step now, not the step before, and
// the ranks of one step would run one after another instead of together.
template <class Part>
void ring_step(Rank* ranks, int count, Part&& part) {
  for (int r = 0; r < count; ++r) {
    const OnDevice on(ranks[r].device);
    CUDA_CHECK(cudaStreamWaitEvent(ranks[r].stream, ranks[wrap(r - 1, count)].step_done, 0));
  }
  for (int r = 0; r < count; ++r) {
    const OnDevice on(ranks[r].device);
    part(r, ranks[wrap(r - 1, count)]);
    CUDA_CHECK(cudaEventRecord(ranks[r].step_done, ranks[r].stream));
  }
}

}  // namespace

void ring_all_reduce(Rank* ranks, int count, std::size_t n, const PeerMatrix& peers) {
  if (count < 2) return;  // one rank: its data is already the sum
  for (int r = 0; r < count; ++r)
    if (!peers.reaches(ranks[r].device, ranks[wrap(r - 1, count)].device))
      throw std::invalid_argument("ring_all_reduce: a rank without peer access to the rank before it");
  // Every rank's data is ready on its stream: record that as step "-1".
  for (int r = 0; r < count; ++r) {
    const OnDevice on(ranks[r].device);
    CUDA_CHECK(cudaEventRecord(ranks[r].step_done, ranks[r].stream));
  }
  // Reduce-scatter: at step s rank r adds the left rank's chunk r - 1 - s into its own
  // (which the left rank completed at its step s - 1), pulling it over the link with step
  // 2's kernel. After count - 1 steps rank r holds chunk r + 1 summed over every rank.
  for (int s = 0; s < count - 1; ++s)
    ring_step(ranks, count, [&](int r, const Rank& left) {
      const auto [first, size] = chunk(n, count, wrap(r - 1 - s, count));
      add_from_peer(ranks[r].data + first, left.data + first, size, ranks[r].device, ranks[r].stream);
    });
  // All-gather: at step s rank r copies the left rank's finished chunk r - s, one peer copy
  // on the receiving rank's stream.
  for (int s = 0; s < count - 1; ++s)
    ring_step(ranks, count, [&](int r, const Rank& left) {
      const auto [first, size] = chunk(n, count, wrap(r - s, count));
      if (size > 0)
        CUDA_CHECK(cudaMemcpyPeerAsync(ranks[r].data + first, ranks[r].device, left.data + first, left.device,
                                       size * sizeof(float), ranks[r].stream));
    });
}

}  // namespace ch10
