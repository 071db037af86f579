// Chapter 10 — the code the chapter provides, to read and keep: the device switch, the peer
// matrix's lookup, the Jacobi sweep step 3 runs on every band, and NCCL's all-reduce that
// step 4 is measured against. Built into the program and the tests alike. The learner does
// not edit this file.
#include "multi_gpu.cuh"

#include "cml/errors.hpp"

#if CML_HAVE_NCCL
#include <nccl.h>
#endif

#include <cstdlib>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace ch10 {

OnDevice::OnDevice(int device) {
  CUDA_CHECK(cudaGetDevice(&before_));
  CUDA_CHECK(cudaSetDevice(device));
}

OnDevice::~OnDevice() { cml::detail::warn_on_error(cudaSetDevice(before_), "cudaSetDevice (OnDevice)"); }

bool PeerMatrix::reaches(int from, int to) const {
  int i = -1, j = -1;
  for (int k = 0; k < count; ++k) {
    if (devices[k] == from) i = k;
    if (devices[k] == to) j = k;
  }
  return i >= 0 && j >= 0 && i != j && enabled[i][j];
}

namespace {

// One thread per inner column of a row, one block row per grid row: the four neighbours'
// loads of a warp are each one run of consecutive floats.
__global__ void jacobi_rows_kernel(const float* __restrict__ in, float* __restrict__ out, int cols, int first,
                                   int last) {
  for (int r = first + static_cast<int>(blockIdx.y); r <= last; r += static_cast<int>(gridDim.y)) {
    const std::size_t row = static_cast<std::size_t>(r) * static_cast<std::size_t>(cols);
    for (int c = static_cast<int>(blockIdx.x * blockDim.x + threadIdx.x); c < cols;
         c += static_cast<int>(gridDim.x * blockDim.x)) {
      if (c == 0 || c == cols - 1)
        out[row + c] = in[row + c];  // the grid's fixed left and right boundary
      else
        out[row + c] = 0.25f * (in[row - cols + c] + in[row + cols + c] + in[row + c - 1] + in[row + c + 1]);
    }
  }
}

}  // namespace

void launch_jacobi_rows(const float* in, float* out, int cols, int first, int last, cudaStream_t stream) {
  if (last < first) return;
  constexpr int kThreads = 256;
  const int across = (cols + kThreads - 1) / kThreads;
  const int rows = last - first + 1;  // a grid's y is at most 65535: the kernel strides over the rest
  const dim3 grid(static_cast<unsigned>(across < 8 ? across : 8), static_cast<unsigned>(rows < 65535 ? rows : 65535));
  jacobi_rows_kernel<<<grid, kThreads, 0, stream>>>(in, out, cols, first, last);
  CUDA_CHECK_LAUNCH();
}

#if CML_HAVE_NCCL
namespace {

void nccl_check(ncclResult_t r, const char* call) {
  if (r != ncclSuccess) throw cml::CheckFailed(std::string(call) + ": " + ncclGetErrorString(r));
}

// One communicator per device of a set, made once (ncclCommInitAll) and kept for the
// process: making them costs far more than an all-reduce.
class Communicators {
 public:
  const std::vector<ncclComm_t>& for_devices(const std::vector<int>& devices) {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = sets_.find(devices);
    if (it == sets_.end()) {
      // NVLink multicast (reductions inside the NVSwitch) stays off: the course compares a
      // ring with NCCL's rings, and on a shared host a program using multicast can take the
      // GPUs out of service. Read when the communicators are made.
      setenv("NCCL_NVLS_ENABLE", "0", 1);
      std::vector<ncclComm_t> comms(devices.size());
      nccl_check(ncclCommInitAll(comms.data(), static_cast<int>(devices.size()), devices.data()), "ncclCommInitAll");
      it = sets_.emplace(devices, std::move(comms)).first;
    }
    return it->second;
  }

 private:
  std::mutex mu_;
  std::map<std::vector<int>, std::vector<ncclComm_t>> sets_;
};

// Never destroyed: at the process's exit CUDA may already be going down, and destroying a
// communicator then can hang; the driver releases everything when the process ends.
Communicators& communicators() {
  static Communicators* c = new Communicators;
  return *c;
}

}  // namespace

bool have_nccl() { return true; }

void nccl_all_reduce(Rank* ranks, int count, std::size_t n) {
  std::vector<int> devices;
  for (int r = 0; r < count; ++r) devices.push_back(ranks[r].device);
  const std::vector<ncclComm_t>& comms = communicators().for_devices(devices);
  nccl_check(ncclGroupStart(), "ncclGroupStart");
  for (int r = 0; r < count; ++r)
    nccl_check(ncclAllReduce(ranks[r].data, ranks[r].data, n, ncclFloat, ncclSum, comms[static_cast<std::size_t>(r)],
                             ranks[r].stream),
               "ncclAllReduce");
  nccl_check(ncclGroupEnd(), "ncclGroupEnd");
}

#else

bool have_nccl() { return false; }

void nccl_all_reduce(Rank*, int, std::size_t) {
  throw cml::Skip(
      "this build has no NCCL, so the ring is not compared with it: ./lab setup installs the "
      "nvidia-nccl-cu13 wheel into .venv, then ./lab build finds it (./lab doctor says whether it did)");
}

#endif

}  // namespace ch10
