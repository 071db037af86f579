// Chapter 08 — the kernels of --mode=entangled (see entangled_commits.hpp). The copy and the
// commit are written once per branch (Branch 0: the first, or the only one; 1: the second),
// with different PTX text (branch_copy.cuh says why). The mode prints each kernel's
// LDGDEPBAR count from this program's SASS: two in the diverged kernel, one in the others.
#include "entangled_commits.hpp"

#include "branch_copy.cuh"
#include "device.cuh"

#include "cml/errors.hpp"

#include <cstdint>
#include <stdexcept>

namespace ch08 {

namespace {

template <int Branch>
__device__ __forceinline__ void commit() {
  if constexpr (Branch == 0)
    asm volatile("cp.async.commit_group; // first branch\n" ::: "memory");
  else
    asm volatile("cp.async.commit_group; // second branch\n" ::: "memory");
}

}  // namespace

template <Commit C, int N>
__global__ void __launch_bounds__(kThreads)
    entangled_copy_kernel(const Piece* in, std::size_t pieces, Piece* out, unsigned long long* cycles) {
  __shared__ Piece stage[kThreads];
  const int t = static_cast<int>(threadIdx.x);
  const bool low = t % 32 < 16;
  unsigned long long spent = 0;
  for (std::size_t first = static_cast<std::size_t>(blockIdx.x) * kThreads; first < pieces;
       first += static_cast<std::size_t>(gridDim.x) * kThreads) {
    const std::size_t p = first + t;
    const bool mine = p < pieces;  // every thread commits, with a copy or not: all count alike
    Piece* const slot = &stage[t];
    if constexpr (C == Commit::converged) {
      if (mine) copy_16_in_branch<0>(slot, in + p);
      commit<0>();
    } else if constexpr (C == Commit::diverged) {
      if (low) {
        if (mine) copy_16_in_branch<0>(slot, in + p);
        commit<0>();
      } else {
        if (mine) copy_16_in_branch<1>(slot, in + p);
        commit<1>();
      }
    } else {
      if (low) {
        if (mine) copy_16_in_branch<0>(slot, in + p);
      } else {
        if (mine) copy_16_in_branch<1>(slot, in + p);
      }
      __syncwarp();  // the guide's advice: reconverge before the commit
      commit<0>();
    }
    const long long before = clock64();
    cp_async_wait<N>();
    spent += static_cast<unsigned long long>(clock64() - before);
    cp_async_wait<0>();        // nothing in flight when the next tile begins
    if (mine) out[p] = *slot;  // its own piece: its own wait is enough (the LDS is done before the next copy)
  }
  cycles[static_cast<std::size_t>(blockIdx.x) * kThreads + t] = spent;
}

const std::vector<CommitKind>& commit_kinds() {
  static const std::vector<CommitKind> k = {
      {Commit::converged, 1, "converged commit", "ch08::entangled_copy_kernel<(ch08::Commit)0, 1>"},
      {Commit::diverged, 1, "lanes 0-15 and 16-31 commit in two branches",
       "ch08::entangled_copy_kernel<(ch08::Commit)1, 1>"},
      {Commit::reconverged, 1, "two branches, __syncwarp, one commit",
       "ch08::entangled_copy_kernel<(ch08::Commit)2, 1>"},
      {Commit::converged, 0, "converged commit, waiting for the tile",
       "ch08::entangled_copy_kernel<(ch08::Commit)0, 0>"},
  };
  return k;
}

void copy_entangled(const CommitKind& k, const Piece* in, std::size_t pieces, Piece* out, unsigned long long* cycles,
                    int blocks, cudaStream_t stream) {
  if (k.commit == Commit::converged && k.wait == 1)
    entangled_copy_kernel<Commit::converged, 1><<<blocks, kThreads, 0, stream>>>(in, pieces, out, cycles);
  else if (k.commit == Commit::diverged && k.wait == 1)
    entangled_copy_kernel<Commit::diverged, 1><<<blocks, kThreads, 0, stream>>>(in, pieces, out, cycles);
  else if (k.commit == Commit::reconverged && k.wait == 1)
    entangled_copy_kernel<Commit::reconverged, 1><<<blocks, kThreads, 0, stream>>>(in, pieces, out, cycles);
  else if (k.commit == Commit::converged && k.wait == 0)
    entangled_copy_kernel<Commit::converged, 0><<<blocks, kThreads, 0, stream>>>(in, pieces, out, cycles);
  else
    throw std::invalid_argument("copy_entangled: no kernel for this commit and wait");
  CUDA_CHECK_LAUNCH();
}

}  // namespace ch08
