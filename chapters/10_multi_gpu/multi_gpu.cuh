// Chapter 10 — moving data between GPUs: the API that exercise.cu implements (the learner's
// part, steps 1-4) and what the chapter provides around it. main.cu, the tests and the
// solution all include this file. Every function leaves the calling thread's current device
// as it found it.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>

namespace ch10 {

constexpr int kMaxDevices = 8;

// Provided: makes `device` the calling thread's current device for its lifetime, then makes
// the one before current again.
class OnDevice {
 public:
  explicit OnDevice(int device);
  ~OnDevice();
  OnDevice(const OnDevice&) = delete;
  OnDevice& operator=(const OnDevice&) = delete;

 private:
  int before_ = 0;
};

// ---- Step 1: peer access, and a copy that takes the right path ---------------------------
// Which device may reach which device's memory directly. enabled[i][j]: kernels and copies
// of devices[i] may use memory of devices[j] (peer access enabled from i to j).
struct PeerMatrix {
  int count = 0;
  int devices[kMaxDevices] = {};
  bool enabled[kMaxDevices][kMaxDevices] = {};
  // By device number rather than position: whether `from` may use `to`'s memory.
  bool reaches(int from, int to) const;
};

// For every ordered pair (i, j), i != j, of devices[0..count) that the hardware allows, make
// devices[i]'s kernels and copies able to use devices[j]'s memory directly. Peer access is a
// setting of the device's context that lasts until it is disabled, so calling this again
// changes nothing and reports no error. Returns which pairs are enabled.
PeerMatrix enable_peer_access(const int* devices, int count);

// One direction between two devices, set up by the caller.
struct Link {
  int src_device = 0, dst_device = 0;
  cudaStream_t src_stream = nullptr;  // a stream of src_device
  cudaStream_t dst_stream = nullptr;  // a stream of dst_device
  cudaEvent_t sent = nullptr;         // an event of src_device, free for the copy to record
  void* staging = nullptr;            // pinned host memory, for a copy that cannot go peer to peer
  std::size_t staging_bytes = 0;
};

enum class Path { Peer, ThroughHost };

// Copies `bytes` from `src` (memory of link.src_device) to `dst` (memory of link.dst_device).
// Directly, device to device, where `peers` has access enabled between the two (either way);
// otherwise through link.staging (bytes <= link.staging_bytes, else std::invalid_argument).
// Only enqueues: work enqueued on link.dst_stream after the call runs after the bytes have
// landed in dst, and work enqueued on link.src_stream after the call may overwrite src.
// The staging buffer is free for the next copy once link.dst_stream's work so far is done.
// The copy does not wait for work already queued that uses dst: the caller orders that.
// Returns the path it took.
Path copy_between(void* dst, const void* src, std::size_t bytes, const Link& link, const PeerMatrix& peers);

// ---- Step 2: a kernel that reads the other GPU's memory ----------------------------------
// Enqueues on `stream` (a stream of `device`) one kernel that sets local[i] += remote[i] for
// every i < n, reading `remote` — memory of another device that `device` has peer access
// to — directly from its kernel: no copy. n is any count, and local (memory of `device`)
// and remote may start anywhere a float may (step 4 passes chunks at any offset).
void add_from_peer(float* local, const float* remote, std::size_t n, int device, cudaStream_t stream);

// ---- Step 3: a halo exchange ---------------------------------------------------------------
// One device's band of a 2D grid of `cols` columns, split by rows over the devices (the first
// device holds the top band). Rows 1..rows are the band's own; row 0 and row rows + 1 are its
// halos: copies of the neighbours' edge rows, or, on the first and the last device, the
// grid's fixed boundary row (the same in cur and next; it never changes).
struct Slab {
  int device = 0;
  float* cur = nullptr;              // (rows + 2) * cols floats, row-major: this sweep's input
  float* next = nullptr;             // the same shape: this sweep's output
  int rows = 0;                      // at least 1
  cudaStream_t compute = nullptr;    // streams of `device`; `edges` has the device's highest
  cudaStream_t edges = nullptr;      // priority, so its small kernels run ahead of big ones
  cudaEvent_t edges_sent = nullptr;  // events of `device`, free to record
  cudaEvent_t done = nullptr;
};

// Provided: one Jacobi sweep of band rows first..last (1-based, inclusive) from `in` to
// `out`: each inner point the mean of its four neighbours in `in`; columns 0 and cols - 1
// (the grid's fixed boundary) copied. Enqueued on `stream`, on the current device.
void launch_jacobi_rows(const float* in, float* out, int cols, int first, int last, cudaStream_t stream);

// `iterations` sweeps over slabs[0..count) (top band first), each sweep from cur to next;
// after each sweep the two are swapped, so at the end every Slab's cur holds the result (the
// Slab's pointers are swapped in place). Only enqueues: no call waits for a GPU. Each
// sweep's edge rows reach the neighbours' halos while the inner rows are computed. Peer
// access between neighbours is enabled (`peers`).
void run_jacobi(Slab* slabs, int count, int cols, int iterations, const PeerMatrix& peers);

// ---- Step 4: a ring all-reduce -----------------------------------------------------------
struct Rank {
  int device = 0;
  float* data = nullptr;            // n floats: this rank's input, and on return the sum
  cudaStream_t stream = nullptr;    // a stream of `device`
  cudaEvent_t step_done = nullptr;  // an event of `device`, free to record
};

// In place: every rank's data becomes the element-wise sum of all the ranks' data. A ring:
// rank r receives from rank r - 1 (rank count - 1 sends to rank 0). A reduce-scatter of
// count - 1 steps leaves each rank one chunk (chunk c: [n * c / count, n * (c + 1) / count))
// summed over every rank; an all-gather of count - 1 steps passes those chunks round. Each step is one operation per
// rank on its own stream, ordered across ranks by events only: only enqueues. Peer access from each rank to the rank
// before it is enabled. The result is complete once every rank's stream is: a rank's data is read by the next rank
// until the last step.
void ring_all_reduce(Rank* ranks, int count, std::size_t n, const PeerMatrix& peers);

// Provided: NCCL's all-reduce (ncclSum of floats) over the same ranks, in place, each on its
// stream; throws cml::Skip where the build has no NCCL (./lab doctor says how to get it).
// The communicators are made once per set of devices and kept.
void nccl_all_reduce(Rank* ranks, int count, std::size_t n);
// Whether the build has NCCL.
bool have_nccl();

}  // namespace ch10
