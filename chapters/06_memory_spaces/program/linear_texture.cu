// Chapter 06 — textures over memory that kernels also write (Best Practices Guide §9.2.4):
// a texture over linear memory (cudaResourceTypeLinear) whose array a kernel overwrites
// with plain stores, a texture over pitched 2D memory (cudaResourceTypePitch2D, clamped at
// its edges), and a CUDA array written through a surface (surf2Dwrite) and read through a
// texture. Every write is in one launch and its read in the next: within one launch the
// texture cache is not kept coherent with global or surface writes, so a read there of
// what the same launch wrote is undefined, and no run here relies on it. Each read is
// compared exactly with the CPU (point sampling returns stored values).
// docs/06_memory_spaces.md, "Textures over memory a kernel writes".
//
//   ./lab run 06 -- --mode=linear-texture
#include "checked_run.hpp"
#include "harness.hpp"
#include "memory_spaces.cuh"
#include "modes.hpp"
#include "textures.hpp"

#include "cml/buffers.hpp"
#include "cml/errors.hpp"
#include "cml/verify.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

namespace ch06 {

namespace {

// Small integers (and halves): exact in float, computed alike on the host and the device.
__host__ __device__ float first_value(int i) { return static_cast<float>(i % 1000); }
__host__ __device__ float second_value(int i) { return static_cast<float>(i % 977) + 0.5f; }
__host__ __device__ float surface_value(int x, int y) { return static_cast<float>((x * 7 + y * 13) % 251) - 125.f; }

constexpr int kLinearCount = 100003;  // not a multiple of the block
constexpr int kWidth = 333, kHeight = 257;
// The pitched read is shifted 3 texels left and 2 down, so clamping shows at two edges.
constexpr int kShiftX = -3, kShiftY = 2;
constexpr int kBlock = 256;

unsigned blocks(int n) { return static_cast<unsigned>((n + kBlock - 1) / kBlock); }

}  // namespace

// In namespace ch06 (not an anonymous one), like every kernel of the program.

__global__ void fetch_linear_kernel(cudaTextureObject_t tex, float* __restrict__ out, int n) {
  const int i = blockIdx.x * kBlock + threadIdx.x;
  if (i < n) out[i] = tex1Dfetch<float>(tex, i);
}

// Plain global stores into the memory behind the linear texture.
__global__ void store_linear_kernel(float* __restrict__ data, int n) {
  const int i = blockIdx.x * kBlock + threadIdx.x;
  if (i < n) data[i] = second_value(i);
}

// out(x, y) = the texel at (x + dx, y + dy), clamped; pixel (i, j) has its centre at
// (i + 0.5, j + 0.5), which point sampling returns exactly.
__global__ void fetch_2d_kernel(cudaTextureObject_t tex, float* __restrict__ out, int w, int h, int dx, int dy) {
  const int x = blockIdx.x * kRotateBlockX + threadIdx.x, y = blockIdx.y * kRotateBlockY + threadIdx.y;
  if (x < w && y < h) out[static_cast<std::size_t>(y) * w + x] = tex2D<float>(tex, x + dx + 0.5f, y + dy + 0.5f);
}

// surf2Dwrite addresses x in bytes, y in rows.
__global__ void write_surface_kernel(cudaSurfaceObject_t surf, int w, int h) {
  const int x = blockIdx.x * kRotateBlockX + threadIdx.x, y = blockIdx.y * kRotateBlockY + threadIdx.y;
  if (x < w && y < h) surf2Dwrite(surface_value(x, y), surf, x * static_cast<int>(sizeof(float)), y);
}

namespace {

const dim3 kBlock2d(kRotateBlockX, kRotateBlockY);

void fetch_2d(cudaTextureObject_t tex, float* out, int w, int h, int dx, int dy, cudaStream_t s) {
  fetch_2d_kernel<<<rotate_grid(w, h), kBlock2d, 0, s>>>(tex, out, w, h, dx, dy);
  CUDA_CHECK_LAUNCH();
}

// A texture over cudaMalloc'd floats, read; the floats overwritten by a kernel; read again
// by the next launch, which must see the new values.
bool linear(Context& c) {
  const int n = kLinearCount;
  std::vector<float> first(n), second(n);
  for (int i = 0; i < n; ++i) {
    first[i] = first_value(i);
    second[i] = second_value(i);
  }
  cml::DeviceBuffer<float> data(n);
  upload(data.data(), first, c.stream);
  const TextureObject tex(linear_texture(data.data(), n, cudaChannelFormatKindFloat));
  const auto fetch = [&](float* o, cudaStream_t s) {
    fetch_linear_kernel<<<blocks(n), kBlock, 0, s>>>(tex.t, o, n);
    CUDA_CHECK_LAUNCH();
  };
  bool ok = run_and_check(c, "linear texture, tex1Dfetch of 100003 floats", fetch, n, exactly(first));
  store_linear_kernel<<<blocks(n), kBlock, 0, c.stream>>>(data.data(), n);
  CUDA_CHECK_LAUNCH();
  ok &= run_and_check(c, "linear texture, read by the launch after one that stored new values into its memory", fetch,
                      n, exactly(second));
  return ok;
}

// A texture over cudaMallocPitch'd floats, read shifted so that clamping shows.
bool pitched(Context& c) {
  const int w = kWidth, h = kHeight;
  const PitchedImage image(w, h, c.stream);
  const TextureObject tex(pitch2d_texture(image.image()));
  std::vector<float> want(image.host.size());
  for (int y = 0; y < h; ++y)
    for (int x = 0; x < w; ++x)
      want[static_cast<std::size_t>(y) * w + x] =
          image.host[static_cast<std::size_t>(std::clamp(y + kShiftY, 0, h - 1)) * w +
                     std::clamp(x + kShiftX, 0, w - 1)];
  std::printf("(pitched image %d x %d floats: %zu bytes a row, pitch %zu bytes)\n", w, h, w * sizeof(float),
              image.image().pitch_bytes);
  return run_and_check(
      c, "pitched 2D texture, tex2D read 3 texels left and 2 down, clamped at the edges",
      [&](float* o, cudaStream_t s) { fetch_2d(tex.t, o, w, h, kShiftX, kShiftY, s); }, want.size(), exactly(want));
}

// A CUDA array written through a surface in one launch, read through a texture in the next,
// and copied back.
bool surface(Context& c) {
  const int w = kWidth, h = kHeight;
  const SurfaceArray array(w, h);
  const SurfaceObject surf(array.get());
  const TextureObject tex(array_texture(array.get()));
  std::vector<float> want(static_cast<std::size_t>(w) * h);
  for (int y = 0; y < h; ++y)
    for (int x = 0; x < w; ++x) want[static_cast<std::size_t>(y) * w + x] = surface_value(x, y);
  write_surface_kernel<<<rotate_grid(w, h), kBlock2d, 0, c.stream>>>(surf.get(), w, h);
  CUDA_CHECK_LAUNCH();
  bool ok = run_and_check(
      c, "CUDA array written by surf2Dwrite, read through a texture by the next launch",
      [&](float* o, cudaStream_t s) { fetch_2d(tex.t, o, w, h, 0, 0, s); }, want.size(), exactly(want));
  std::vector<float> back(want.size(), std::nanf(""));
  CUDA_CHECK(cudaMemcpy2DFromArrayAsync(back.data(), w * sizeof(float), array.get(), 0, 0, w * sizeof(float), h,
                                        cudaMemcpyDeviceToHost, c.stream));
  c.stream.synchronize();
  const auto v = cml::compare_exact(back.data(), want.data(), want.size());
  std::printf("CUDA array copied back (cudaMemcpy2DFromArrayAsync): %s\n", v.describe().c_str());
  return ok && v.ok;
}

}  // namespace

bool linear_texture_mode(Context& c) {
  std::printf(
      "\n== Textures over memory that kernels write: linear, pitched 2D, and a CUDA array written through a "
      "surface ==\n"
      "The rule: a kernel must not read through a texture (or a surface) what it writes in the same launch, "
      "by global stores or surface writes. The texture cache is read-only and is not kept coherent with "
      "those writes during a launch, so such a read returns undefined data. The defined way, run below: "
      "write in one launch, read in the next.\n");
  bool ok = linear(c);
  ok &= pitched(c);
  ok &= surface(c);
  return ok;
}

}  // namespace ch06
