// Chapter 04 — global memory coalescing: the API that exercise.cu implements (the
// learner's part, steps 1-4) and the kernels the chapter provides for its experiments.
// main.cu, the tests and the solution all include this file.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>

namespace ch04 {

// ---- What every launcher of steps 1-4 does ---------------------------------------------------
// It launches its one kernel (named below) on `stream`, and nothing else, on no other stream:
// the caller reads the result, and the tests time it, through `stream`. It only enqueues: it
// returns without waiting for the kernel (the caller synchronises). n may pass 2^31 where
// memory holds the arrays. The kernel's grid is
// 1-D, of 1-D blocks, sized for the launcher's work items (steps 1 and 4: the n floats;
// step 3: the n particles; step 2: the n / 4 float4 groups, plus the n % 4 floats of the tail):
//  - it fills the GPU: at least one thread per work item (step 2: per group; the tail may be
//    copied by threads that also copy a group), or, where there are more work items than
//    grid_for's largest grid has threads, at least as many threads as that grid;
//  - no block is without work: at most ceil(work items / threads per block) blocks.
// grid_for(n) blocks of 256 threads is such a grid for steps 1, 3 and 4; for step 2, a grid
// that covers the groups and the tail is one, and so is a loop over grid_for(n / 4) blocks.

// ---- Step 1: a coalesced copy -------------------------------------------------------------
// out[i] = in[i] for i < n, consecutive threads on consecutive elements, over a grid that
// fills the GPU (grid-stride loop). The kernel must be named copy_coalesced_kernel.
void copy_coalesced(const float* in, float* out, std::size_t n, cudaStream_t stream);

// ---- Step 2: 16-byte accesses ------------------------------------------------------------
// The same copy with float4 loads and stores (LDG.E.128 in SASS), and a correct tail when
// n is not a multiple of 4. in and out come from cudaMalloc (256-byte aligned). The kernel
// must be named copy_vectorized_kernel.
void copy_vectorized(const float* in, float* out, std::size_t n, cudaStream_t stream);

// ---- Step 3: array of structures -> structure of arrays -----------------------------------
// A particle as one record (64 bytes). The update reads position and velocity (24 bytes)
// and writes position (12): with records, every warp drags whole records through memory.
// Its alignment is a float's (4 bytes), whatever its size: a record meant to be read with
// 16-byte loads must say so (struct __align__(16) ..., or alignas(16)).
struct Particle {
  float x, y, z;
  float vx, vy, vz;
  float fx, fy, fz;
  float mass, charge, radius;
  float temperature, age;
  int id, kind;
};
static_assert(sizeof(Particle) == 64, "a particle is one 64-byte record");

// A particle's position and velocity along axis 0 (x), 1 (y) or 2 (z), on the host.
inline float& position(Particle& p, int axis) { return axis == 0 ? p.x : axis == 1 ? p.y : p.z; }
inline float velocity(const Particle& p, int axis) { return axis == 0 ? p.vx : axis == 1 ? p.vy : p.vz; }

// The same particles, one array per field (only the fields the update uses).
struct ParticlesSoA {
  float *x, *y, *z;
  const float *vx, *vy, *vz;
};

// Provided: x += vx * dt (and y, z) over the records.
void advance_aos(Particle* p, std::size_t n, float dt, cudaStream_t stream);
// Step 3: the same update over the arrays. The kernel must be named advance_soa_kernel.
void advance_soa(ParticlesSoA p, std::size_t n, float dt, cudaStream_t stream);

// ---- Step 4: a strided pattern -------------------------------------------------------------
// out[i] = in[i] * factor. As shipped, each thread scales its own run of 32 consecutive
// elements, so a warp's 32 loads land 128 bytes apart. The kernel must be named
// scale_kernel.
void scale(const float* in, float* out, std::size_t n, float factor, cudaStream_t stream);

// ---- Provided by the chapter (provided.cu) -------------------------------------------------

// Thread i copies element i + offset (offset copy) or i * stride (stride copy) of `in` to
// element i of `out`, for i < n, with elements of elem_bytes (4: float, 8: double, 16:
// float4). The kernels are named offset_copy and stride_copy.
void launch_offset_copy(const void* in, void* out, std::size_t n, std::size_t offset, unsigned elem_bytes,
                        cudaStream_t stream);
void launch_stride_copy(const void* in, void* out, std::size_t n, std::size_t stride, unsigned elem_bytes,
                        cudaStream_t stream);

// Blocks for a grid-stride kernel of 256 threads that fills the GPU (enough warps in
// flight on every SM) without more blocks than work.
unsigned grid_for(std::size_t work_items);

}  // namespace ch04
