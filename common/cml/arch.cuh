// What the GPU architecture being compiled for offers, for device code that must build for
// every GPU the course serves (compute capability 7.5 to 12.x; README, "Requirements"). nvcc
// compiles a .cu file once per target architecture, with __CUDA_ARCH__ set to it (750 for
// sm_75); the host pass has no __CUDA_ARCH__. Instructions that an architecture lacks must
// not reach its ptxas at all, and a launch bound must not ask for more resident threads
// than its SMs hold: either is a build error there (warnings are errors).
//
// A kernel whose instructions need a newer GPU compiles, for older targets, to a body that
// traps; its launcher (or the test of its step, through needs.txt) refuses those GPUs first.
#pragma once

#if defined(__CUDA_ARCH__)
#define CML_ARCH __CUDA_ARCH__
#else
#define CML_ARCH 0  // the host pass: no device instruction is compiled in it
#endif

// cp.async (LDGSTS) and the mbarrier object exist from sm_80 on; bulk copies, mbarrier
// transaction counts and the tensor memory accelerator from sm_90 on. True in the host pass,
// where they guard nothing that is compiled.
#define CML_ARCH_HAS_CP_ASYNC (CML_ARCH == 0 || CML_ARCH >= 800)
#define CML_ARCH_HAS_TMA (CML_ARCH == 0 || CML_ARCH >= 900)

// Resident threads an SM holds (the programming guide's table of compute capabilities):
// 1024 on sm_75, 1536 on sm_86, sm_89 and sm_110 onwards (Thor, GeForce RTX 50), 2048 on the
// others (sm_80, sm_87, sm_90, sm_100). The host pass takes the largest: launch bounds are
// applied by the device passes only.
#if CML_ARCH == 750
#define CML_ARCH_THREADS_PER_SM 1024
#elif CML_ARCH == 860 || CML_ARCH == 890 || CML_ARCH >= 1100
#define CML_ARCH_THREADS_PER_SM 1536
#else
#define CML_ARCH_THREADS_PER_SM 2048
#endif

namespace cml::arch {

// The minimum-blocks argument of __launch_bounds__(threads, ...): `wanted` blocks per SM
// where the architecture holds that many, else as many as it holds. Each block then keeps
// 65536 / (threads * blocks) registers a thread or more.
constexpr int blocks_per_sm(int threads, int wanted) {
  return threads * wanted <= CML_ARCH_THREADS_PER_SM ? wanted : CML_ARCH_THREADS_PER_SM / threads;
}

}  // namespace cml::arch
