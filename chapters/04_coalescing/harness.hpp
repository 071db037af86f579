// Chapter 04 — what the program and the tests share: the access patterns of the chapter's
// copy kernels with the sector model's prediction for each, float buffers with a known
// input and a poisoned output, and particles as records and as arrays, each with its check.
#pragma once

#include "coalescing.cuh"

#include "cml/buffers.hpp"
#include "cml/timing.hpp"
#include "cml/verify.hpp"

#include <cstddef>
#include <functional>
#include <string>
#include <vector>

namespace ch04 {

// One access pattern of the chapter's copy kernels: thread i copies element i + k of `in`
// (an offset copy, kernel offset_copy) or element i * k (a stride copy, stride_copy), of
// elem_bytes-byte elements (4: float, 8: double, 16: float4).
struct Pattern {
  enum Kind { Offset, Stride };
  Kind kind = Offset;
  std::size_t k = 0;
  unsigned elem_bytes = 4;

  std::size_t stride() const { return kind == Stride ? k : 1; }
  std::size_t offset() const { return kind == Offset ? k : 0; }
  std::string name() const;  // "offset 8, float", "stride 2, double"
  // The sector model's L1 sectors per warp request, and the fraction of moved bytes wanted.
  double model_sectors_per_request() const;
  double model_efficiency() const;
  // Enqueues the copy of n elements.
  void launch(const void* in, void* out, std::size_t n, cudaStream_t stream) const;
};

// The chapter's sweeps of float copies: offsets 0 .. kSweepMax, strides 1 .. kSweepMax.
constexpr std::size_t kSweepMax = 32;
std::vector<Pattern> offset_sweep();
// Elements the sweep's copy of p writes over `bytes` of input: a stride copy reads
// n * stride elements, so its output shrinks with the stride and its input always spans the
// working set; an offset copy leaves room for the largest offset.
inline std::size_t sweep_n(const Pattern& p, std::size_t bytes) {
  return p.kind == Pattern::Offset ? bytes / 4 - kSweepMax : bytes / 4 / p.k;
}
std::vector<Pattern> stride_sweep();

// Floats on the device: an input in which no offset or stride finds another element's
// value (exact in float, no value repeated within a million elements), with its host
// copy, and an output poisoned with all bits set (NaN, equal to nothing), so that an
// element never written fails the check.
struct Arrays {
  explicit Arrays(std::size_t floats);
  void poison(cudaStream_t stream) const;
  // out[j] == want(j) for j < count, and out[count], where there is one, still poisoned:
  // nothing was written past the end.
  cml::VerifyResult verify(std::size_t count, const std::function<float(std::size_t)>& want) const;
  // The copy of pattern p over n elements.
  cml::VerifyResult verify_copy(const Pattern& p, std::size_t n) const;
  // cudaMemcpy device to device of the first n floats: the ceiling copies are held to.
  cml::Work memcpy_work(std::size_t n) const;

  cml::DeviceBuffer<float> in, out;
  std::vector<float> host;
};

// n particles as 64-byte records and as arrays of the fields the update uses (positions and
// velocities, small whole numbers: an update by a dt of 1/2 or 1/4 is exact), with their
// host copy.
struct Particles {
  explicit Particles(std::size_t n);
  // The arrays' positions along `axis` (0 x, 1 y, 2 z) after advance_soa(dt).
  cml::VerifyResult verify_axis(int axis, float dt) const;

  std::vector<Particle> host;
  cml::DeviceBuffer<Particle> aos;
  std::vector<cml::DeviceBuffer<float>> fields;  // x, y, z, vx, vy, vz
  ParticlesSoA soa{};
};

}  // namespace ch04
