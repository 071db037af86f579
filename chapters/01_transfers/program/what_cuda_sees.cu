// Chapter 01 — see what_cuda_sees.hpp.
#include "what_cuda_sees.hpp"

#include "cml/api_trace.hpp"
#include "cml/errors.hpp"
#include "cml/trace.hpp"

#include <cstdio>
#include <memory>
#include <vector>

namespace ch01 {

const char* pointer_kind(const void* p) {
  cudaPointerAttributes attr{};
  CUDA_CHECK(cudaPointerGetAttributes(&attr, p));
  switch (attr.type) {
    case cudaMemoryTypeHost: return "pinned";
    case cudaMemoryTypeDevice: return "device";
    case cudaMemoryTypeManaged: return "managed";
    default: return "pageable";
  }
}

void print_host_access(const cml::DeviceFacts& facts) {
  std::printf("pageableMemoryAccess = %d: %s\n", facts.pageable_memory_access,
              facts.pageable_memory_access
                  ? "kernels may also read plain malloc memory here (HMM/ATS), without any copy"
                  : "kernels cannot read plain malloc memory: it must be pinned and mapped");
  const std::unique_ptr<std::byte[]> plain(new std::byte[64]);
  std::printf("a malloc pointer is %s memory to CUDA\n", pointer_kind(plain.get()));
}

void print_send_batched_trace(const PieceSet& set, cudaStream_t stream, const cml::Run& run) {
  cml::trace::Recorder recorder;
  // The first launch under a new trace can be held back while CUPTI sets itself up: the
  // timeline is of a second call.
  send_batched(set.batch, set.staging, stream);
  recorder.discard();
  cml::api::Recorder calls;  // which of its calls kept the host waiting, for the timeline
  send_batched(set.batch, set.staging, stream);
  const std::vector<cml::trace::HostRecord> waits = cml::api::long_calls(calls.stop());
  cml::trace::Trace t = recorder.stop();
  t.host = waits;
  if (t.ok) {
    std::printf("your send_batched issued %zu host-to-device copies and %zu kernel(s)\n",
                t.copies_of(cml::trace::CopyKind::HtoD).size(), t.kernels.size());
    run.write("timeline_send_batched.csv", t.to_csv());  // ./lab profile 01 draws it
  } else {
    std::printf("(trace unavailable: %s)\n", t.error.c_str());
  }
}

}  // namespace ch01
