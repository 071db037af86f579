// Chapter 06 — the program's texture and surface objects (textures.hpp says what each is).
#include "textures.hpp"

#include <cstdint>
#include <cstring>
#include <string>

namespace ch06 {

namespace {

cudaChannelFormatDesc word(cudaChannelFormatKind kind) { return cudaCreateChannelDesc(32, 0, 0, 0, kind); }

// Point sampling, element reads, unnormalised coordinates, clamp on every axis.
cudaTextureObject_t make_texture(const cudaResourceDesc& resource) {
  cudaTextureDesc t;
  std::memset(&t, 0, sizeof(t));
  for (auto& mode : t.addressMode) mode = cudaAddressModeClamp;
  t.filterMode = cudaFilterModePoint;
  t.readMode = cudaReadModeElementType;
  t.normalizedCoords = 0;
  cudaTextureObject_t tex = 0;
  CUDA_CHECK(cudaCreateTextureObject(&tex, &resource, &t, nullptr));
  return tex;
}

cudaResourceDesc zeroed() {
  cudaResourceDesc r;
  std::memset(&r, 0, sizeof(r));
  return r;
}

}  // namespace

cudaTextureObject_t linear_texture(const void* data, std::size_t count, cudaChannelFormatKind kind) {
  // A linear texture must start at a multiple of the device's texture alignment
  // (cudaDevAttrTextureAlignment); say so plainly rather than as cudaErrorInvalidValue.
  int device = 0, alignment = 1;
  CUDA_CHECK(cudaGetDevice(&device));
  CUDA_CHECK(cudaDeviceGetAttribute(&alignment, cudaDevAttrTextureAlignment, device));
  if (alignment > 0 && reinterpret_cast<std::uintptr_t>(data) % static_cast<std::uintptr_t>(alignment) != 0)
    throw cml::CheckFailed("linear_texture: the memory does not start at a multiple of the texture alignment (" +
                           std::to_string(alignment) + " bytes)");
  cudaResourceDesc r = zeroed();
  r.resType = cudaResourceTypeLinear;
  r.res.linear.devPtr = const_cast<void*>(data);
  r.res.linear.desc = word(kind);
  r.res.linear.sizeInBytes = count * 4;
  return make_texture(r);
}

cudaTextureObject_t pitch2d_texture(const Image& img) {
  cudaResourceDesc r = zeroed();
  r.resType = cudaResourceTypePitch2D;
  r.res.pitch2D.devPtr = const_cast<float*>(img.data);
  r.res.pitch2D.desc = word(cudaChannelFormatKindFloat);
  r.res.pitch2D.width = static_cast<std::size_t>(img.width);
  r.res.pitch2D.height = static_cast<std::size_t>(img.height);
  r.res.pitch2D.pitchInBytes = img.pitch_bytes;
  return make_texture(r);
}

cudaTextureObject_t array_texture(cudaArray_t array) {
  cudaResourceDesc r = zeroed();
  r.resType = cudaResourceTypeArray;
  r.res.array.array = array;
  return make_texture(r);
}

SurfaceArray::SurfaceArray(int width, int height) {
  const cudaChannelFormatDesc f = word(cudaChannelFormatKindFloat);
  cudaArray_t a = nullptr;
  CUDA_CHECK(cudaMallocArray(&a, &f, static_cast<std::size_t>(width), static_cast<std::size_t>(height),
                             cudaArraySurfaceLoadStore));
  adopt(a);
}

SurfaceObject::SurfaceObject(cudaArray_t array) {
  cudaResourceDesc r = zeroed();
  r.resType = cudaResourceTypeArray;
  r.res.array.array = array;
  cudaSurfaceObject_t s = 0;
  CUDA_CHECK(cudaCreateSurfaceObject(&s, &r));
  adopt(s);
}

}  // namespace ch06
