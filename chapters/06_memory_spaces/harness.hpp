// Chapter 06 — what the program and the tests (tests/test_06_memory_spaces.cpp) share: the
// inputs and CPU references of the three steps (with the rotation's tolerance for the
// texture unit's 9-bit weights), and the device buffers every check runs on, each filled,
// run and read back in the order of one stream. Host code only.
#pragma once

#include "memory_spaces.cuh"

#include "cml/buffers.hpp"
#include "cml/errors.hpp"
#include "cml/guarded.hpp"
#include "cml/verify.hpp"

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <sstream>
#include <string>
#include <vector>

namespace ch06 {

// ---- Step 1: the filter -------------------------------------------------------------------

using Shape = cml::MatrixShape;
// Rows not a multiple of the segment, columns not a multiple of the block or of 32, fewer
// rows than taps, one column.
inline const std::vector<Shape>& fir_shapes() {
  static const std::vector<Shape> s = {{1024, 1024, "round"},       {1000, 1037, "ragged"},
                                       {333, 129, "ragged, small"}, {17, 300, "fewer rows than taps"},
                                       {200, 1, "one column"},      {1, 77, "one row"}};
  return s;
}

inline Taps fir_taps(int seed = 0) {
  Taps t{};
  for (int k = 0; k < kTaps; ++k) t.w[k] = static_cast<float>(((k * 37 + seed * 11) % 23) - 11) / 64.0f;
  return t;
}
// Small integers / 64 in, so every partial sum is exact in float: the filter is compared exactly.
inline float fir_input(std::size_t i) { return static_cast<float>(static_cast<int>((i * 2654435761u) % 33u) - 16); }

inline std::vector<float> fir_reference(const std::vector<float>& in, int rows, int cols, const Taps& t) {
  std::vector<float> out(in.size());
  for (int r = 0; r < rows; ++r)
    for (int c = 0; c < cols; ++c) {
      double acc = 0;
      for (int k = 0; k < kTaps && k <= r; ++k) acc += double(t.w[k]) * in[static_cast<std::size_t>(r - k) * cols + c];
      out[static_cast<std::size_t>(r) * cols + c] = static_cast<float>(acc);
    }
  return out;
}

// ---- Step 2: the mix ----------------------------------------------------------------------

inline std::vector<float> mix_matrix(int seed = 0) {
  std::vector<float> m(kChannels * kChannels);
  for (int i = 0; i < kChannels * kChannels; ++i) m[i] = static_cast<float>(((i * 29 + seed * 7) % 31) - 15) / 32.0f;
  return m;
}
inline float mix_input(std::size_t i) { return static_cast<float>(static_cast<int>((i * 40503u) % 61u) - 30); }
// Exact too: products of small integers / 32, sums well under 2^24 / 32.
inline std::vector<float> mix_reference(const std::vector<float>& in, const std::vector<float>& m, int n) {
  std::vector<float> out(in.size());
  for (int r = 0; r < kChannels; ++r)
    for (int p = 0; p < n; ++p) {
      double acc = 0;
      for (int c = 0; c < kChannels; ++c) acc += double(m[r * kChannels + c]) * in[static_cast<std::size_t>(c) * n + p];
      out[static_cast<std::size_t>(r) * n + p] = static_cast<float>(acc);
    }
  return out;
}
inline const std::vector<int>& mix_sizes() {
  static const std::vector<int> s = {1 << 16, 100003, 1000, 33, 1};
  return s;
}

// ---- Step 3: the rotation ------------------------------------------------------------------

// Smooth waves plus a fine pattern, every value in [0.35, 1]: no pixel is 0, so a read
// outside the image that is not 0 (clamp) shows at every edge, and neighbours differ, so
// nearest-pixel sampling or a half-pixel shift shows everywhere.
inline float image_value(int x, int y) {
  return 0.6f + 0.25f * std::sin(0.07f * x) * std::cos(0.05f * y) +
         0.15f * static_cast<float>((x * 7 + y * 13) % 17) / 17.0f;
}

// The texture unit blends with weights in 9-bit fixed point, 8 of its bits fractional
// (CUDA Programming Guide, "Linear Filtering"): each weight may be off by up to 1/256 from
// the exact fraction (and the coordinates, computed in float on both sides, add about
// 1/1024 more at our sizes). With a' = a + ea, b' = b + eb, the bilinear value moves by
//   ea * [(1-b)(T10 - T00) + b(T11 - T01)] + eb * [(1-a)(T01 - T00) + a(T11 - T10)] + ea eb (T00 - T10 - T01 + T11),
// so a pixel may differ from the exact value by at most
//   e (max|T10 - T00|, |T11 - T01|) + e (max|T01 - T00|, |T11 - T10|) + e^2 |T00 - T10 - T01 + T11|,
// e = 1/256 + 1/1024, plus float rounding (1e-5 of the largest value). Tight: nearest-pixel
// sampling misses by a |T10 - T00| (a up to 1/2), a half-pixel shift by half a neighbour's
// difference, clamping by a whole edge value.
inline constexpr double kWeightError = 1.0 / 256 + 1.0 / 1024;

struct Rotation {
  std::vector<float> want, tolerance;
};
inline Rotation rotation_reference(const std::vector<float>& img, int w, int h, float angle) {
  float cs = 0, sn = 0;
  rotation_cos_sin(angle, cs, sn);
  const auto at = [&](long i, long j) -> double {
    return (i < 0 || j < 0 || i >= w || j >= h) ? 0.0 : img[static_cast<std::size_t>(j) * w + i];
  };
  Rotation r;
  r.want.resize(static_cast<std::size_t>(w) * h);
  r.tolerance.resize(r.want.size());
  for (int y = 0; y < h; ++y)
    for (int x = 0; x < w; ++x) {
      const double dx = x + 0.5 - 0.5 * w, dy = y + 0.5 - 0.5 * h;
      const double sx = cs * dx + sn * dy + 0.5 * w - 0.5, sy = -sn * dx + cs * dy + 0.5 * h - 0.5;
      const double fx = std::floor(sx), fy = std::floor(sy), a = sx - fx, b = sy - fy;
      const long i = static_cast<long>(fx), j = static_cast<long>(fy);
      const double t00 = at(i, j), t10 = at(i + 1, j), t01 = at(i, j + 1), t11 = at(i + 1, j + 1);
      const std::size_t o = static_cast<std::size_t>(y) * w + x;
      r.want[o] = static_cast<float>((1 - b) * ((1 - a) * t00 + a * t10) + b * ((1 - a) * t01 + a * t11));
      const double e = kWeightError;
      r.tolerance[o] = static_cast<float>(e * std::max(std::abs(t10 - t00), std::abs(t11 - t01)) +
                                          e * std::max(std::abs(t01 - t00), std::abs(t11 - t10)) +
                                          e * e * std::abs(t00 - t10 - t01 + t11) + 1e-5);
    }
  return r;
}

struct RotationCase {
  int width, height;
  float angle;
  const char* what;
};
inline const std::vector<RotationCase>& rotation_cases() {
  static const std::vector<RotationCase> c = {
      {256, 256, 0.0f, "no rotation"}, {333, 257, 0.5235988f, "30 degrees, ragged"},
      {640, 480, 1.0f, "1 radian"},    {97, 203, 3.1415927f, "half a turn"},
      {1, 1, 0.3f, "one pixel"},       {500, 31, -0.2f, "thin, -0.2 radian"},
  };
  return c;
}

// First pixel outside its tolerance: "" when all agree.
inline std::string rotation_mismatch(const std::vector<float>& got, const Rotation& ref, int w) {
  std::size_t bad = 0, first = got.size();
  double worst = 0;
  for (std::size_t i = 0; i < got.size(); ++i) {
    const double d = std::abs(double(got[i]) - ref.want[i]);
    if (!(d <= ref.tolerance[i])) {
      if (first == got.size()) first = i;
      ++bad;
      worst = std::max(worst, std::isfinite(d) ? d : 1e30);
    }
  }
  if (bad == 0) return "";
  std::ostringstream s;
  s << bad << " of " << got.size() << " pixels outside the tolerance; first at (x " << first % w << ", y " << first / w
    << "): got " << got[first] << ", want " << ref.want[first] << " +- " << ref.tolerance[first] << "; worst miss "
    << worst;
  return s.str();
}

// ---- Device buffers, in the order of one stream ------------------------------------------
// Every copy and memset below is enqueued on the stream the kernel will run on. The
// synchronous cudaMemcpy / cudaMemset go through the legacy default stream, which a
// non-blocking stream does not wait for: cudaMemset returns before it has run, and
// cudaMemcpy from pageable memory may return before its copy has landed ("API
// synchronization behavior", CUDA Runtime API), so a kernel on a non-blocking stream could
// read the input too early or be overwritten by the poison after it ran.

// n floats of `host` into `device`, enqueued on `stream`.
inline void upload(float* device, const std::vector<float>& host, cudaStream_t stream) {
  CUDA_CHECK(cudaMemcpyAsync(device, host.data(), host.size() * sizeof(float), cudaMemcpyHostToDevice, stream));
}

// Outputs are cml::GuardedBuffer<float>s: n floats and a guard after them, all poisoned with
// 0xFF bytes (a NaN no kernel of the chapter writes); construct each with the stream its
// kernel runs on (Output out(n, stream)), so the poison lands before the kernel runs.
using Output = cml::GuardedBuffer<float>;

// Call right after `function` enqueued its kernel on `stream` to write `out`: waits for the
// stream, copies the n values into `got`, and returns "" or what went wrong before the
// values can be compared: a launch error `function` left unreported, a kernel that did not
// run (every value still the poison), or a write past the end of out.
inline std::string read_output(const Output& out, std::vector<float>& got, const std::string& function,
                               cudaStream_t stream) {
  const cudaError_t launch = cudaGetLastError();  // a launch error the function left unreported
  const std::string past_end = out.read(got, "out", stream);
  if (launch != cudaSuccess)
    return "the kernel did not run: its launch failed with " + std::string(cudaGetErrorName(launch)) + " (" +
           cudaGetErrorString(launch) + "), and " + function +
           " did not report it: check every launch with "
           "CUDA_CHECK_LAUNCH()";
  if (!got.empty() && std::all_of(got.begin(), got.end(), Output::is_poison))
    return "the kernel did not run (or wrote nothing): all " + std::to_string(got.size()) +
           " values of out still "
           "hold the 0xFF poison written before the launch, and no CUDA error was reported (cudaGetLastError after " +
           function + ": cudaSuccess)";
  return past_end.empty() ? "" : function + ": " + past_end;
}

// The image image_value(x, y), w x h, in pitched device memory (cudaMallocPitch, whose pitch
// suits a 2D texture), uploaded on `stream`; `host` keeps it dense, for the references.
class PitchedImage {
 public:
  PitchedImage(int w, int h, cudaStream_t stream) : host(static_cast<std::size_t>(w) * h), w_(w), h_(h) {
    for (int y = 0; y < h; ++y)
      for (int x = 0; x < w; ++x) host[static_cast<std::size_t>(y) * w + x] = image_value(x, y);
    void* p = nullptr;
    CUDA_CHECK(cudaMallocPitch(&p, &pitch_, w * sizeof(float), h));
    data_ = static_cast<float*>(p);
    const cudaError_t copy = cudaMemcpy2DAsync(data_, pitch_, host.data(), w * sizeof(float), w * sizeof(float), h,
                                               cudaMemcpyHostToDevice, stream);
    if (copy != cudaSuccess) cudaFree(data_);  // the destructor of a half-built object does not run
    CUDA_CHECK(copy);
  }
  PitchedImage(const PitchedImage&) = delete;
  PitchedImage& operator=(const PitchedImage&) = delete;
  ~PitchedImage() { cml::detail::warn_on_error(cudaFree(data_), "cudaFree of the pitched image"); }
  Image image() const { return Image{data_, pitch_, w_, h_}; }

  std::vector<float> host;

 private:
  float* data_ = nullptr;
  std::size_t pitch_ = 0;
  int w_, h_;
};

// A texture object from create_rotation_texture, destroyed with the owner (0: none made).
struct TextureObject {
  cudaTextureObject_t t = 0;
  explicit TextureObject(cudaTextureObject_t made) : t(made) {}
  TextureObject(const TextureObject&) = delete;
  TextureObject& operator=(const TextureObject&) = delete;
  ~TextureObject() {
    if (t != 0) cml::detail::warn_on_error(cudaDestroyTextureObject(t), "cudaDestroyTextureObject");
  }
};

}  // namespace ch06
