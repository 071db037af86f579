// Chapter 08 — the kernels of --mode=cache-hints (see hint_copies.hpp): the optional parts
// of cp.async, each in its own small inline-PTX wrapper (these are an experiment of the
// program, not the learner's cp_async of exercise.cu). All of them need sm_80, as cp.async
// does. What nvcc 13.0 emits for each on sm_90 is in docs/08, "Cache hints and ignore-src".
#include "hint_copies.hpp"

#include "device.cuh"

#include "cml/errors.hpp"

#include <cstdint>
#include <stdexcept>
#include <string>

namespace ch08 {

namespace {

constexpr int kPiecesPerThread = 4;  // one round: 4 copies per thread, 16 KiB per block

// createpolicy.fractional: an L2 cache policy (a 64-bit value, opaque) that gives the
// fraction 1.0 of the accesses made with it the priority named — evict_first: these lines
// go first when L2 needs room (data read once); evict_last: they go last (data read again).
// nvcc folds the policy into constants: no instruction of its own in SASS.
template <Hint H>
__device__ __forceinline__ std::uint64_t l2_policy() {
  std::uint64_t policy = 0;
  if constexpr (H == Hint::evict_first) asm("createpolicy.fractional.L2::evict_first.b64 %0, 1.0;\n" : "=l"(policy));
  if constexpr (H == Hint::evict_last) asm("createpolicy.fractional.L2::evict_last.b64 %0, 1.0;\n" : "=l"(policy));
  return policy;
}

template <Hint H>
inline constexpr bool kHasPolicy = H == Hint::evict_first || H == Hint::evict_last;

// cp.async.cg of 16 bytes with the hint H: .L2::cache_hint takes the policy as its last
// operand; .L2::64B/128B/256B let the L2 fetch that much around the 16 bytes (a prefetch
// into L2, not into shared memory).
template <Hint H>
__device__ __forceinline__ void cp_async_hinted(void* dst, const void* src, std::uint64_t policy) {
  const std::uint32_t to = shared_address(dst);
  const auto from = __cvta_generic_to_global(src);
  if constexpr (H == Hint::none)
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(to), "l"(from) : "memory");
  if constexpr (kHasPolicy<H>)
    asm volatile("cp.async.cg.shared.global.L2::cache_hint [%0], [%1], 16, %2;\n" ::"r"(to), "l"(from), "l"(policy)
                 : "memory");
  if constexpr (H == Hint::prefetch_64)
    asm volatile("cp.async.cg.shared.global.L2::64B [%0], [%1], 16;\n" ::"r"(to), "l"(from) : "memory");
  if constexpr (H == Hint::prefetch_128)
    asm volatile("cp.async.cg.shared.global.L2::128B [%0], [%1], 16;\n" ::"r"(to), "l"(from) : "memory");
  if constexpr (H == Hint::prefetch_256)
    asm volatile("cp.async.cg.shared.global.L2::256B [%0], [%1], 16;\n" ::"r"(to), "l"(from) : "memory");
}

// The store of a piece, with the copy's L2 policy when it has one (st.global.L2::cache_hint).
template <Hint H>
__device__ __forceinline__ void store_hinted(Piece* dst, const Piece& v, std::uint64_t policy) {
  if constexpr (kHasPolicy<H>)
    asm volatile("st.global.L2::cache_hint.v4.u32 [%0], {%1, %2, %3, %4}, %5;\n" ::"l"(__cvta_generic_to_global(dst)),
                 "r"(v.x), "r"(v.y), "r"(v.z), "r"(v.w), "l"(policy)
                 : "memory");
  else
    *dst = v;
}

// cp.async.cg of 16 bytes that reads nothing and writes 16 zeros when `skip`: with the
// ignore-src predicate operand, or with src-size = 0 (16 otherwise). The PTX differs; the
// SASS nvcc 13.0 emits for the two is the same (docs/08).
template <Unread How>
__device__ __forceinline__ void cp_async_unless(void* dst, const void* src, bool skip) {
  const std::uint32_t to = shared_address(dst);
  const auto from = __cvta_generic_to_global(src);
  if constexpr (How == Unread::ignore_src)
    asm volatile(
        "{\n"
        "  .reg .pred ignore;\n"
        "  setp.ne.u32 ignore, %2, 0;\n"
        "  cp.async.cg.shared.global [%0], [%1], 16, ignore;\n"
        "}\n" ::"r"(to),
        "l"(from), "r"(static_cast<std::uint32_t>(skip))
        : "memory");
  else
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(to), "l"(from), "r"(skip ? 0 : 16) : "memory");
}

// The rounds of a block: 4 pieces per thread, piece first + j * 256 + threadIdx.x.
template <class Copy, class Store>
__device__ __forceinline__ void copy_rounds(std::size_t pieces, Copy&& copy, Store&& store) {
  __shared__ Piece stage[kPiecesPerThread * kThreads];
  constexpr std::size_t kPerBlock = kPiecesPerThread * kThreads;
  for (std::size_t first = blockIdx.x * kPerBlock; first < pieces; first += gridDim.x * kPerBlock) {
#pragma unroll
    for (int j = 0; j < kPiecesPerThread; ++j) {
      const std::size_t p = first + j * kThreads + threadIdx.x;
      if (p < pieces) copy(&stage[j * kThreads + threadIdx.x], p);
    }
    cp_async_wait_all();  // this thread's copies have landed; it reads back only those
#pragma unroll
    for (int j = 0; j < kPiecesPerThread; ++j) {
      const std::size_t p = first + j * kThreads + threadIdx.x;
      // The store needs the LDS's value, so the LDS is done before the next round's copy
      // into the same slot is issued.
      if (p < pieces) store(p, stage[j * kThreads + threadIdx.x]);
    }
  }
}

}  // namespace

template <Hint H>
__global__ void __launch_bounds__(kThreads) hinted_copy_kernel(const Piece* in, std::size_t pieces, Piece* out) {
  const std::uint64_t policy = l2_policy<H>();
  copy_rounds(
      pieces, [&](Piece* slot, std::size_t p) { cp_async_hinted<H>(slot, in + p, policy); },
      [&](std::size_t p, const Piece& v) { store_hinted<H>(out + p, v, policy); });
}

template <Unread How>
__global__ void __launch_bounds__(kThreads)
    masked_copy_kernel(const Piece* in, std::size_t pieces, Piece* out, unsigned run_log2) {
  copy_rounds(
      pieces, [&](Piece* slot, std::size_t p) { cp_async_unless<How>(slot, in + p, masked(p, run_log2)); },
      [&](std::size_t p, const Piece& v) { out[p] = v; });
}

const std::vector<HintKind>& hint_kinds() {
  static const std::vector<HintKind> k = {
      {Hint::none, "cp.async.cg (no hint)", "ch08::hinted_copy_kernel<(ch08::Hint)0>"},
      {Hint::evict_first, ".L2::cache_hint, evict_first", "ch08::hinted_copy_kernel<(ch08::Hint)1>"},
      {Hint::evict_last, ".L2::cache_hint, evict_last", "ch08::hinted_copy_kernel<(ch08::Hint)2>"},
      {Hint::prefetch_64, ".L2::64B", "ch08::hinted_copy_kernel<(ch08::Hint)3>"},
      {Hint::prefetch_128, ".L2::128B", "ch08::hinted_copy_kernel<(ch08::Hint)4>"},
      {Hint::prefetch_256, ".L2::256B", "ch08::hinted_copy_kernel<(ch08::Hint)5>"},
  };
  return k;
}

void copy_hinted(Hint hint, const Piece* in, std::size_t pieces, Piece* out, int blocks, cudaStream_t stream) {
  switch (hint) {
    case Hint::none: hinted_copy_kernel<Hint::none><<<blocks, kThreads, 0, stream>>>(in, pieces, out); break;
    case Hint::evict_first:
      hinted_copy_kernel<Hint::evict_first><<<blocks, kThreads, 0, stream>>>(in, pieces, out);
      break;
    case Hint::evict_last:
      hinted_copy_kernel<Hint::evict_last><<<blocks, kThreads, 0, stream>>>(in, pieces, out);
      break;
    case Hint::prefetch_64:
      hinted_copy_kernel<Hint::prefetch_64><<<blocks, kThreads, 0, stream>>>(in, pieces, out);
      break;
    case Hint::prefetch_128:
      hinted_copy_kernel<Hint::prefetch_128><<<blocks, kThreads, 0, stream>>>(in, pieces, out);
      break;
    case Hint::prefetch_256:
      hinted_copy_kernel<Hint::prefetch_256><<<blocks, kThreads, 0, stream>>>(in, pieces, out);
      break;
  }
  CUDA_CHECK_LAUNCH();
}

void copy_masked(Unread how, unsigned run_log2, const Piece* in, std::size_t pieces, Piece* out, int blocks,
                 cudaStream_t stream) {
  if (run_log2 > 40) throw std::invalid_argument("copy_masked: runs of 2^" + std::to_string(run_log2) + " pieces");
  if (how == Unread::ignore_src)
    masked_copy_kernel<Unread::ignore_src><<<blocks, kThreads, 0, stream>>>(in, pieces, out, run_log2);
  else
    masked_copy_kernel<Unread::src_size_zero><<<blocks, kThreads, 0, stream>>>(in, pieces, out, run_log2);
  CUDA_CHECK_LAUNCH();
}

}  // namespace ch08
