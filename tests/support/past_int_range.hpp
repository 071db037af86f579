// Past 2^31 elements an index, an offset or a grid stride held in an int (the tutorials'
// habit) wraps, and every smaller size a test uses passes it. Where the GPU has room for an
// input and an output of n > 2^31 floats, a kernel runs over them: the input set by a memset
// to 0x3F bytes (each float 0.747...), the output to NaN, and the last 2 Mi elements, both
// sides of 2^31, read back against f(0.747...). Skipped where memory is short (a 16 GB GPU),
// and under a sanitizer (2^31 instrumented accesses).
#pragma once

#include "catch.hpp"
#include "cuda_fault.hpp"
#include "gpu.hpp"
#include "sanitizer_target.hpp"
#include "cml/buffers.hpp"
#include "cml/cli.hpp"
#include "cml/errors.hpp"
#include "cml/stream.hpp"

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstring>
#include <exception>
#include <optional>
#include <string>
#include <vector>

namespace cml::test {

// `launch(in, out, stream)` over n floats each; `what` names the call ("copy_coalesced over
// 2^31 + 37 floats"), `advice` ends the failure ("step 1; ./lab hint 04").
template <typename Launch, typename F>
void check_past_int_range(const std::string& what, std::size_t n, Launch launch, F f, const std::string& advice) {
  device();
  const std::size_t bytes = n * sizeof(float), need = 2 * bytes + (std::size_t{1} << 30);
  if (!whole_run_sanitizer().empty()) CML_SKIP(what + " is too long a run under compute-sanitizer");
  std::size_t free_now = 0, total = 0;
  CUDA_CHECK(cudaMemGetInfo(&free_now, &total));  // now, not when the process began
  if (need > free_now)
    CML_SKIP(what + " needs " + cml::format_bytes(need) + " of free GPU memory; this GPU has " +
             cml::format_bytes(free_now));
  std::optional<cml::DeviceBuffer<float>> in_buffer, out_buffer;
  try {
    in_buffer.emplace(n);
    out_buffer.emplace(n);
  } catch (const std::exception& e) {  // another process took the memory meanwhile
    cudaGetLastError();
    CML_SKIP(what + ": the arrays could not be allocated (" + e.what() + ")");
  }
  cml::DeviceBuffer<float>& in = *in_buffer;
  cml::DeviceBuffer<float>& out = *out_buffer;
  cml::Stream s;
  CUDA_CHECK(cudaMemsetAsync(in.data(), 0x3F, bytes, s));
  CUDA_CHECK(cudaMemsetAsync(out.data(), 0xFF, bytes, s));
  const auto fault = cuda_fault([&] {
    launch(in.data(), out.data(), s.get());
    s.synchronize();
  });
  const std::string why = "an index or offset held in 32 bits wraps past 2^31 - 1 — keep them in std::size_t (";
  if (fault) FAIL(what << " faulted (" << *fault << "): " << why << advice << ")");
  const std::size_t from = (std::size_t{1} << 31) - (std::size_t{1} << 20);
  std::vector<float> got(n - from);
  CUDA_CHECK(cudaMemcpy(got.data(), out.data() + from, got.size() * sizeof(float), cudaMemcpyDeviceToHost));
  float x = 0;
  const unsigned pattern = 0x3F3F3F3Fu;
  std::memcpy(&x, &pattern, sizeof(x));
  const float want = f(x);
  std::size_t bad = got.size();
  for (std::size_t i = 0; i < got.size() && bad == got.size(); ++i)
    if (!(got[i] == want)) bad = i;
  INFO(what << ": element " << (bad == got.size() ? 0 : from + bad) << " is " << (bad == got.size() ? want : got[bad])
            << ", want " << want << (bad < got.size() && from + bad >= (std::size_t{1} << 31) ? " (past 2^31 - 1)" : "")
            << ": " << why << advice << ")");
  CHECK(bad == got.size());
}

}  // namespace cml::test
