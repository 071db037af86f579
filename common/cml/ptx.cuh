// Wrappers over the PTX instructions of asynchronous copies into shared memory, one per
// instruction, each saying what it does and what it compiles to (nvcc 13.0, sm_90).
// Chapter 08 teaches them; chapter 09 builds its pipelines on them. Device code: nvcc only.
//
// Shared-memory operands are addresses in the .shared state space (32 bits), not generic
// pointers: each wrapper converts with __cvta_generic_to_shared, so callers pass the
// ordinary pointer to the __shared__ object. The sm_90 instructions (mbarrier transaction
// counts, bulk copies, tensor copies) exist from PTX for sm_90 on; on older targets those
// wrappers compile to a trap, and callers check the GPU before launching a kernel that
// uses them (needs.txt). cp.async itself is not here: chapter 08's learner writes it.
//
// Two words these comments use: the *tensor memory accelerator* (TMA) is a unit of each SM
// that moves bulk and tensor copies between global and shared memory; the *asynchronous
// proxy* is the PTX memory model's name for the path those copies take, which does not see a
// thread's ordinary shared-memory accesses in program order (docs/08_cp_async_ptx.md).
#pragma once

#include "cml/arch.cuh"

#include <cuda.h>  // CUtensorMap

#include <cstdint>

namespace cml::ptx {

// The .shared address of a pointer to shared memory.
__device__ __forceinline__ std::uint32_t shared_address(const void* p) {
  return static_cast<std::uint32_t>(__cvta_generic_to_shared(p));
}

// %globaltimer: nanoseconds, the same clock in every SM.
__device__ __forceinline__ unsigned long long global_ns() {
  unsigned long long t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

// ---- cp.async groups (sm_80) -------------------------------------------------------------------

// cp.async.commit_group: closes this thread's group of cp.async issued since the last
// commit (an empty group if none). SASS: LDGDEPBAR.
__device__ __forceinline__ void cp_async_commit() {
#if CML_ARCH_HAS_CP_ASYNC
  asm volatile("cp.async.commit_group;\n" ::: "memory");
#else
  __trap();
#endif
}

// cp.async.wait_group N: waits until at most N of this thread's committed groups are still
// pending — the newest N; every older group has landed. N is an immediate in the
// instruction, so it is a template parameter. It covers THIS thread's copies only: another
// thread's words are visible after a barrier that follows that thread's wait.
// SASS: DEPBAR.LE SB0, N.
template <int N>
__device__ __forceinline__ void cp_async_wait() {
  static_assert(N >= 0 && N <= 7, "cp.async.wait_group takes 0 to 7 here (the SASS scoreboard counts to 7)");
#if CML_ARCH_HAS_CP_ASYNC
  asm volatile("cp.async.wait_group %0;\n" ::"n"(N) : "memory");
#else
  __trap();
#endif
}

// cp.async.wait_all: commits and waits for everything (= commit_group; wait_group 0).
__device__ __forceinline__ void cp_async_wait_all() {
#if CML_ARCH_HAS_CP_ASYNC
  asm volatile("cp.async.wait_all;\n" ::: "memory");
#else
  __trap();
#endif
}

// ---- mbarrier (sm_90 for the transaction counts) -----------------------------------------------

// mbarrier.init: a barrier object in shared memory (8 bytes, 8-byte aligned) whose phase
// completes when `arrivals` arrivals have been made AND its transaction count is back to
// zero. One thread initialises it; then a fence that makes the init visible to the
// asynchronous proxy (below) and a __syncthreads() for the other threads, before anyone
// uses it. SASS: SYNCS.EXCH.64.
__device__ __forceinline__ void mbarrier_init(std::uint64_t* bar, unsigned arrivals) {
#if CML_ARCH_HAS_CP_ASYNC
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\n" ::"r"(shared_address(bar)), "r"(arrivals) : "memory");
#else
  (void)bar;
  (void)arrivals;
  __trap();
#endif
}

// Bulk and tensor copies go through the asynchronous proxy: it does not see this thread's
// ordinary accesses to shared memory in program order, and a __syncthreads does not order
// them for it. Two fences do, after an mbarrier.init:
//
// fence.proxy.async.shared::cta orders all of this thread's ordinary (generic proxy)
// accesses to shared memory before later asynchronous-proxy accesses: after an init, and
// wherever ordinary stores meet a TMA copy (threads write a tile a TMA store then reads).
// The CUDA Programming Guide's TMA example uses it after the init.
// SASS: FENCE.VIEW.ASYNC.S, MEMBAR.ALL.CTA, FENCE.VIEW.ASYNC.S.
__device__ __forceinline__ void fence_proxy_async_shared() {
#if CML_ARCH_HAS_TMA
  asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
#else
  __trap();
#endif
}

// fence.mbarrier_init.release.cluster: the lighter fence for exactly this case (the inits
// of this thread, released to the cluster). nvcc 13.0 for sm_90 emits no instruction of its
// own for it (a NOP) in a launch without clusters; PTX still asks for one of the two.
__device__ __forceinline__ void fence_mbarrier_init() {
#if CML_ARCH_HAS_TMA
  asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
#else
  __trap();
#endif
}

// mbarrier.arrive: one arrival, with release semantics (this thread's reads and writes of
// shared memory come before it for whoever waits on the phase). SASS (sm_90):
// SYNCS.ARRIVE.TRANS64.A1T0, one arrival and no transaction bytes.
__device__ __forceinline__ void mbarrier_arrive(std::uint64_t* bar) {
#if CML_ARCH_HAS_CP_ASYNC
  asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];\n" ::"r"(shared_address(bar)) : "memory");
#else
  (void)bar;
  __trap();
#endif
}

// mbarrier.arrive.expect_tx: this thread arrives on the barrier and adds `bytes` to the
// transaction count of its current phase: the phase cannot complete before copies that
// complete_tx on this barrier have delivered that many bytes. Say exactly the bytes the
// copies of this phase will deliver: fewer, and the phase completes early (or a later
// phase is corrupted); more, and it never completes. SASS: SYNCS.ARRIVE.TRANS64.
__device__ __forceinline__ void mbarrier_arrive_expect_tx(std::uint64_t* bar, unsigned bytes) {
#if CML_ARCH_HAS_TMA
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\n" ::"r"(shared_address(bar)), "r"(bytes)
               : "memory");
#else
  (void)bar;
  (void)bytes;
  __trap();
#endif
}

// mbarrier.try_wait.parity: whether the phase of parity `parity` (0 even, 1 odd) has
// completed (acquire). The parity names the current phase or the one just before it:
// asking for the current phase's parity waits for it; asking for the other parity means
// "the phase before", which has completed, and returns true at once. So the k-th use of a
// barrier waits for parity k & 1. The hardware may suspend the thread a while before
// answering false. SASS: SYNCS.PHASECHK.TRANS64.TRYWAIT.
__device__ __forceinline__ bool mbarrier_try_wait_parity(std::uint64_t* bar, unsigned parity) {
#if CML_ARCH_HAS_TMA
  std::uint32_t done = 0;
  asm volatile(
      "{\n"
      "  .reg .pred p;\n"
      "  mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\n"
      "  selp.u32 %0, 1, 0, p;\n"
      "}\n"
      : "=r"(done)
      : "r"(shared_address(bar)), "r"(parity)
      : "memory");
  return done != 0;
#else
  (void)bar;
  (void)parity;
  __trap();
  return false;
#endif
}

// mbarrier.test_wait.parity: the same question as mbarrier_try_wait_parity, from sm_80 on
// (the barrier's cp.async arrivals exist there too), answered at once, never suspending the
// thread: a loop on it spins. SASS: SYNCS.PHASECHK.TRANS64 (sm_90).
__device__ __forceinline__ bool mbarrier_test_wait_parity(std::uint64_t* bar, unsigned parity) {
#if CML_ARCH_HAS_CP_ASYNC
  std::uint32_t done = 0;
  asm volatile(
      "{\n"
      "  .reg .pred p;\n"
      "  mbarrier.test_wait.parity.shared::cta.b64 p, [%1], %2;\n"
      "  selp.u32 %0, 1, 0, p;\n"
      "}\n"
      : "=r"(done)
      : "r"(shared_address(bar)), "r"(parity)
      : "memory");
  return done != 0;
#else
  (void)bar;
  (void)parity;
  __trap();
  return false;
#endif
}

// ---- Bulk and tensor copies (sm_90) ------------------------------------------------------------

// cp.async.bulk global -> shared, completing on `bar`: one instruction, issued by one
// thread, moves `bytes` (a multiple of 16, > 0) from `src` (16-byte aligned, global) to `dst`
// (16-byte aligned, shared) through the TMA unit, and then completes `bytes` transactions on
// the barrier (complete_tx). SASS: UBLKCP.S.G. The destination is named .shared::cta (PTX
// ISA 8.6, CUDA 12.8), this block's own shared memory: with .shared::cluster, which may
// name another block's, nvcc 13.0 compiles for sm_120 a check of the block and a fallback
// call through local memory (and the same SASS for sm_90).
__device__ __forceinline__ void bulk_copy_to_shared(void* dst, const void* src, unsigned bytes, std::uint64_t* bar) {
#if CML_ARCH_HAS_TMA
  asm volatile("cp.async.bulk.shared::cta.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];\n" ::"r"(
                   shared_address(dst)),
               "l"(src), "r"(bytes), "r"(shared_address(bar))
               : "memory");
#else
  (void)dst;
  (void)src;
  (void)bytes;
  (void)bar;
  __trap();
#endif
}

// cp.async.bulk.tensor.2d global -> shared through a tensor map, completing on `bar`: one
// instruction moves the box whose first element is at column x, row y of the map's matrix
// (coordinates in elements, innermost dimension first) into `dst` (128-byte aligned, 1024
// under a 128-byte swizzle; shared), rows one after another. Elements of the box outside the
// matrix are not read: they land as zeros. The transactions it completes are always the
// whole box's bytes, inside the matrix or not. `map` is the address of a __grid_constant__
// kernel parameter (or of a tensor map in global or constant memory). SASS: UTMALDG.2D.
// Into .shared::cta, as the bulk copy above.
__device__ __forceinline__ void tensor_load_2d(void* dst, const CUtensorMap* map, int x, int y, std::uint64_t* bar) {
#if CML_ARCH_HAS_TMA
  asm volatile(
      "cp.async.bulk.tensor.2d.shared::cta.global.tile.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3}], [%4];\n" ::
          "r"(shared_address(dst)),
      "l"(reinterpret_cast<std::uint64_t>(map)), "r"(x), "r"(y), "r"(shared_address(bar))
      : "memory");
#else
  (void)dst;
  (void)map;
  (void)x;
  (void)y;
  (void)bar;
  __trap();
#endif
}

}  // namespace cml::ptx
