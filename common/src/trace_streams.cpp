// stream_id_of: CUPTI's id for a stream handle, to match against records' stream_id.
#include "cml/trace.hpp"

#include "cml/driver.hpp"
#include "cml/errors.hpp"
#include "cupti_error.hpp"

#include <cuda.h>

#include <cstdint>
#include <string>

namespace cml::trace {

// Records carry CUPTI's stream id, and cuptiGetStreamIdEx is CUPTI's documented way to get
// that same id for a handle. (On CUDA 13 an explicit stream's CUPTI id was seen to equal
// cudaStreamGetId's, but nothing promises that, so CUPTI is asked.) cudaStream_t and
// CUstream are the same type, so a runtime stream goes straight in.
//
// Seen on an H200 with CUPTI 13: for an explicit stream the context argument may be NULL,
// but for the default streams (a null handle) a NULL context gives
// CUPTI_ERROR_INVALID_STREAM: CUPTI needs the context to know whose default stream is
// meant. With the current context it answers, and the ids match the records (the legacy
// stream was 7, the per-thread stream another id). The context comes from the driver's
// cuCtxGetCurrent, reached through cudaGetDriverEntryPointByVersion: the runtime hands out
// driver entry points itself, so nothing beyond cudart and CUPTI is linked (libcuda is
// loaded by cudart in any case).
namespace {
CUcontext current_context() {
  using GetCurrent = CUresult(CUDAAPI*)(CUcontext*);
  static const GetCurrent get_current = [] {
    const auto fn = driver_function<GetCurrent>("cuCtxGetCurrent", 12000);
    if (fn == nullptr) throw CheckFailed("cml::trace::stream_id_of: the CUDA driver has no cuCtxGetCurrent");
    return fn;
  }();
  // The runtime makes its primary context current lazily; this no-op makes sure it has.
  CUDA_CHECK(cudaFree(nullptr));
  CUcontext ctx = nullptr;
  if (get_current(&ctx) != CUDA_SUCCESS || ctx == nullptr)
    throw CheckFailed("cml::trace::stream_id_of: no current CUDA context");
  return ctx;
}
}  // namespace

std::uint32_t stream_id_of(cudaStream_t stream) {
  CUcontext ctx = nullptr;  // only a membership check for explicit streams: leave it out
  CUstream s = stream;
  uint8_t per_thread = 0;
  // The default streams, spelled as CUPTI wants them: a null handle, with perThreadStream
  // telling the legacy stream (0) from the per-thread one (1). A null handle means the
  // legacy stream here: this file is not built with --default-stream per-thread.
  if (stream == nullptr || stream == cudaStreamLegacy || stream == cudaStreamPerThread) {
    per_thread = stream == cudaStreamPerThread ? 1 : 0;
    s = nullptr;
    ctx = current_context();
  }
  uint32_t id = 0;
  const std::string err = CUPTI_CALL(cuptiGetStreamIdEx(ctx, s, per_thread, &id));
  if (!err.empty()) throw CheckFailed("cml::trace::stream_id_of: " + err);
  return id;
}

}  // namespace cml::trace
