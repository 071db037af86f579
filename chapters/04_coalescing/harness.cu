// Chapter 04 — see harness.hpp: what the program and the tests share.
#include "harness.hpp"

#include "cml/errors.hpp"
#include "cml/sectors.hpp"

#include <cstdint>
#include <cstring>
#include <random>

namespace ch04 {

std::string Pattern::name() const {
  const char* type = elem_bytes == 4 ? "float" : elem_bytes == 8 ? "double" : "float4";
  return std::string(kind == Offset ? "offset " : "stride ") + std::to_string(k) + ", " + type;
}

// 64 warps: enough for a misaligned offset to show its average over lines and warps.
double Pattern::model_sectors_per_request() const {
  return cml::sectors_per_request(0, 64, stride(), offset(), elem_bytes);
}

double Pattern::model_efficiency() const { return cml::efficiency(0, 64, stride(), offset(), elem_bytes); }

void Pattern::launch(const void* in, void* out, std::size_t n, cudaStream_t stream) const {
  if (kind == Offset)
    launch_offset_copy(in, out, n, k, elem_bytes, stream);
  else
    launch_stride_copy(in, out, n, k, elem_bytes, stream);
}

std::vector<Pattern> offset_sweep() {
  std::vector<Pattern> sweep;
  for (std::size_t k = 0; k <= kSweepMax; ++k) sweep.push_back({Pattern::Offset, k, 4});
  return sweep;
}

std::vector<Pattern> stride_sweep() {
  std::vector<Pattern> sweep;
  for (std::size_t k = 1; k <= kSweepMax; ++k) sweep.push_back({Pattern::Stride, k, 4});
  return sweep;
}

Arrays::Arrays(std::size_t floats) : in(floats), out(floats), host(floats) {
  for (std::size_t i = 0; i < floats; ++i) host[i] = static_cast<float>(i % 1000003) * 0.5f + 1.0f;
  cml::upload(in.data(), host.data(), host.size());
  poison(nullptr);
  CUDA_CHECK(cudaDeviceSynchronize());  // work on any stream finds the output poisoned
}

void Arrays::poison(cudaStream_t stream) const { CUDA_CHECK(cudaMemsetAsync(out.data(), 0xFF, out.bytes(), stream)); }

cml::VerifyResult Arrays::verify(std::size_t count, const std::function<float(std::size_t)>& want_of) const {
  const bool past_end = count < out.size();  // a float after the last one asked for
  std::vector<float> got(count + (past_end ? 1 : 0)), want(count);
  CUDA_CHECK(cudaMemcpy(got.data(), out.data(), got.size() * sizeof(float), cudaMemcpyDeviceToHost));
  for (std::size_t j = 0; j < count; ++j) want[j] = want_of(j);
  auto r = cml::compare_exact(got.data(), want.data(), count);
  // NaN never compares equal: compare the bits of the poisoned word.
  std::uint32_t bits = 0;
  if (past_end) std::memcpy(&bits, &got[count], sizeof bits);
  if (r.ok && past_end && bits != 0xFFFFFFFFu) {
    r.ok = false;
    r.first_bad = count;
    r.got = "a write";
    r.want = "nothing (past the end)";
    r.bad_count = 1;
  }
  return r;
}

cml::VerifyResult Arrays::verify_copy(const Pattern& p, std::size_t n) const {
  const std::size_t floats = p.elem_bytes / sizeof(float);  // per element
  return verify(n * floats, [&](std::size_t j) {
    const std::size_t i = j / floats;
    return host[(i * p.stride() + p.offset()) * floats + j % floats];
  });
}

cml::Work Arrays::memcpy_work(std::size_t n) const {
  return [this, n](cudaStream_t stream) {
    CUDA_CHECK(cudaMemcpyAsync(out.data(), in.data(), n * sizeof(float), cudaMemcpyDeviceToDevice, stream));
  };
}

Particles::Particles(std::size_t n) : host(n), aos(n) {
  std::minstd_rand rng(static_cast<unsigned>(n));
  for (auto& p : host) {
    p = Particle{};
    for (int axis = 0; axis < 3; ++axis) position(p, axis) = static_cast<float>(rng() % 1000);
    p.vx = static_cast<float>(rng() % 9) - 4;
    p.vy = static_cast<float>(rng() % 9) - 4;
    p.vz = static_cast<float>(rng() % 9) - 4;
  }
  CUDA_CHECK(cudaMemcpy(aos.data(), host.data(), aos.bytes(), cudaMemcpyHostToDevice));
  std::vector<float> field(n);
  for (int f = 0; f < 6; ++f) {
    for (std::size_t i = 0; i < n; ++i) field[i] = f < 3 ? position(host[i], f) : velocity(host[i], f - 3);
    fields.emplace_back(n);
    CUDA_CHECK(cudaMemcpy(fields.back().data(), field.data(), n * sizeof(float), cudaMemcpyHostToDevice));
  }
  CUDA_CHECK(cudaDeviceSynchronize());  // lands before a kernel on a non-blocking stream
  soa = ParticlesSoA{fields[0].data(), fields[1].data(), fields[2].data(),
                     fields[3].data(), fields[4].data(), fields[5].data()};
}

cml::VerifyResult Particles::verify_axis(int axis, float dt) const {
  const std::size_t n = host.size();
  std::vector<float> got(n), want(n);
  CUDA_CHECK(
      cudaMemcpy(got.data(), fields[static_cast<std::size_t>(axis)].data(), n * sizeof(float), cudaMemcpyDeviceToHost));
  for (std::size_t i = 0; i < n; ++i) {
    Particle p = host[i];
    want[i] = position(p, axis) + velocity(p, axis) * dt;
  }
  return cml::compare_exact(got.data(), want.data(), n);
}

}  // namespace ch04
