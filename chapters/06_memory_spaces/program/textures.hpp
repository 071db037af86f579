// Chapter 06 — the texture and surface objects of the program's going-further modes
// (--mode=latency, --mode=linear-texture), each made in one place and owned by RAII:
// textures over linear memory, over pitched 2D memory and over a CUDA array, a CUDA array
// that surfaces may write, and a surface object over it. harness.hpp's TextureObject owns
// the textures. Host code.
#pragma once

#include "memory_spaces.cuh"

#include "cml/errors.hpp"
#include "cml/handle.hpp"

#include <cuda_runtime_api.h>

#include <cstddef>

namespace ch06 {

// Every texture below reads elements as they are stored (cudaReadModeElementType), at
// unnormalised coordinates, with point sampling: a fetch returns one stored value exactly,
// so a CPU reference can be compared exactly.

// count 32-bit words at `data` (cudaMalloc'd), cudaResourceTypeLinear: read with
// tex1Dfetch<T>(tex, i), an integer index; no filtering and no addressing modes (out of
// range is the caller's to avoid). kind: cudaChannelFormatKindUnsigned or ...Float.
cudaTextureObject_t linear_texture(const void* data, std::size_t count, cudaChannelFormatKind kind);
// The floats of `img` (cudaMallocPitch: its pitch meets texturePitchAlignment),
// cudaResourceTypePitch2D, clamped at every edge: tex2D<float>(tex, x + 0.5f, y + 0.5f).
cudaTextureObject_t pitch2d_texture(const Image& img);
// A float CUDA array, cudaResourceTypeArray, clamped at every edge.
cudaTextureObject_t array_texture(cudaArray_t array);

namespace detail {
inline constexpr const char* kFreeArray = "cudaFreeArray";
inline constexpr const char* kDestroySurface = "cudaDestroySurfaceObject";
}  // namespace detail

// A width x height CUDA array of floats that surfaces may read and write
// (cudaArraySurfaceLoadStore); textures may read it too.
class SurfaceArray : public cml::detail::Handle<cudaArray_t, cudaFreeArray, detail::kFreeArray> {
 public:
  SurfaceArray(int width, int height);
};

// A surface object over `array`: surf2Dwrite / surf2Dread, x in bytes.
class SurfaceObject
    : public cml::detail::Handle<cudaSurfaceObject_t, cudaDestroySurfaceObject, detail::kDestroySurface> {
 public:
  explicit SurfaceObject(cudaArray_t array);
};

}  // namespace ch06
