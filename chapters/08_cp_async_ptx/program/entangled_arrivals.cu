// Chapter 08 — the kernels of --mode=entangled's arrive-on table (see entangled_arrivals.hpp).
// The copies and arrivals of the two branches are written with different PTX text, so the
// compiler cannot merge them into one before the branch (branch_copy.cuh says why). The
// mode prints each kernel's ARRIVES count from this program's SASS.
#include "entangled_arrivals.hpp"

#include "branch_copy.cuh"
#include "device.cuh"

#include "cml/errors.hpp"

#include <cstdint>
#include <stdexcept>

namespace ch08 {

namespace {

// The barrier's arrival, once this thread's cp.async operations so far have landed. .noinc:
// the arrival counts against the count the barrier was made with (one per thread).
template <int Branch>
__device__ __forceinline__ void arrive_on(std::uint64_t* bar) {
  if constexpr (Branch == 0)
    asm volatile("cp.async.mbarrier.arrive.noinc.shared::cta.b64 [%0]; // first branch\n" ::"r"(shared_address(bar))
                 : "memory");
  else
    asm volatile("cp.async.mbarrier.arrive.noinc.shared::cta.b64 [%0]; // second branch\n" ::"r"(shared_address(bar))
                 : "memory");
}

}  // namespace

template <Arrival A>
__global__ void __launch_bounds__(kThreads)
    arrival_copy_kernel(const Piece* in, std::size_t pieces, Piece* out, unsigned long long* cycles) {
  __shared__ Piece stage[kThreads];
  __shared__ std::uint64_t bar;
  const int t = static_cast<int>(threadIdx.x);
  const int lane = t % 32;
  const bool low = lane < 16;
  if (t == 0) mbarrier_init(&bar, kThreads);
  __syncthreads();
  unsigned long long spent = 0;
  unsigned parity = 0;
  for (std::size_t first = static_cast<std::size_t>(blockIdx.x) * kThreads; first < pieces;
       first += static_cast<std::size_t>(gridDim.x) * kThreads, parity ^= 1u) {
    const std::size_t p = first + t;
    const bool mine = p < pieces;
    Piece* const slot = &stage[t];
    long long before = 0;
    if constexpr (A == Arrival::converged) {
      if (mine) copy_16_in_branch<0>(slot, in + p);
      before = clock64();
      arrive_on<0>(&bar);
    } else if constexpr (A == Arrival::halves) {
      if (low) {
        if (mine) copy_16_in_branch<0>(slot, in + p);
        before = clock64();
        arrive_on<0>(&bar);
      } else {
        if (mine) copy_16_in_branch<1>(slot, in + p);
        before = clock64();
        arrive_on<1>(&bar);
      }
    } else if constexpr (A == Arrival::lanes) {
      if (mine) copy_16_in_branch<0>(slot, in + p);
      before = clock64();
      for (int l = 0; l < 32; ++l) {
        if (lane == l) arrive_on<0>(&bar);
        __syncwarp();  // one lane's arrival at a time
      }
    } else {
      if (low) {
        if (mine) copy_16_in_branch<0>(slot, in + p);
      } else {
        if (mine) copy_16_in_branch<1>(slot, in + p);
      }
      __syncwarp();  // the guide's advice: reconverge before the arrival
      before = clock64();
      arrive_on<0>(&bar);
    }
    while (!mbarrier_test_wait_parity(&bar, parity)) {
    }
    spent += static_cast<unsigned long long>(clock64() - before);
    if (mine) out[p] = *slot;  // every thread's copy has landed: the phase completed
  }
  cycles[static_cast<std::size_t>(blockIdx.x) * kThreads + t] = spent;
}

const std::vector<ArrivalKind>& arrival_kinds() {
  static const std::vector<ArrivalKind> k = {
      {Arrival::converged, "converged arrive-on", "ch08::arrival_copy_kernel<(ch08::Arrival)0>"},
      {Arrival::halves, "lanes 0-15 and 16-31 arrive in two branches", "ch08::arrival_copy_kernel<(ch08::Arrival)1>"},
      {Arrival::lanes, "one lane at a time (32 arrivals a warp)", "ch08::arrival_copy_kernel<(ch08::Arrival)2>"},
      {Arrival::reconverged, "two branches, __syncwarp, one arrive-on", "ch08::arrival_copy_kernel<(ch08::Arrival)3>"},
  };
  return k;
}

void copy_arrivals(const ArrivalKind& k, const Piece* in, std::size_t pieces, Piece* out, unsigned long long* cycles,
                   int blocks, cudaStream_t stream) {
  switch (k.arrival) {
    case Arrival::converged:
      arrival_copy_kernel<Arrival::converged><<<blocks, kThreads, 0, stream>>>(in, pieces, out, cycles);
      break;
    case Arrival::halves:
      arrival_copy_kernel<Arrival::halves><<<blocks, kThreads, 0, stream>>>(in, pieces, out, cycles);
      break;
    case Arrival::lanes:
      arrival_copy_kernel<Arrival::lanes><<<blocks, kThreads, 0, stream>>>(in, pieces, out, cycles);
      break;
    case Arrival::reconverged:
      arrival_copy_kernel<Arrival::reconverged><<<blocks, kThreads, 0, stream>>>(in, pieces, out, cycles);
      break;
    default: throw std::invalid_argument("copy_arrivals: no kernel for this arrival");
  }
  CUDA_CHECK_LAUNCH();
}

}  // namespace ch08
