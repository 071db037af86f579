// Chapter 01 — --mode=mapped-setup: what decides whether, and how, a kernel may use host
// memory, as this GPU and this process report it; then a kernel reads a plain cudaMallocHost
// allocation through its host pointer, and its sum is checked. The rule: under unified
// addressing every pinned allocation is mapped at its host address, with no flag to set
// (docs/01_transfers.md, "Mapped memory: what has to be set up").
#include "modes.hpp"

#include "harness.hpp"
#include "transfers.cuh"
#include "what_cuda_sees.hpp"

#include "cml/buffers.hpp"
#include "cml/errors.hpp"
#include "cml/table.hpp"
#include "cml/verify.hpp"

#include <cstdint>
#include <cstdio>
#include <string>

namespace ch01 {

namespace {

int attribute(cudaDeviceAttr what, int device) {
  int value = 0;
  CUDA_CHECK(cudaDeviceGetAttribute(&value, what, device));
  return value;
}

const char* yes_no(bool b) { return b ? "yes" : "no"; }

}  // namespace

bool mapped_setup(Context& c) {
  std::printf("\n== Mapped memory: what this GPU and process report ==\n");
  const int device = c.run.facts.index;
  const bool can_map = attribute(cudaDevAttrCanMapHostMemory, device) != 0;
  const bool unified = attribute(cudaDevAttrUnifiedAddressing, device) != 0;
  const bool integrated = attribute(cudaDevAttrIntegrated, device) != 0;
  unsigned flags = 0;
  CUDA_CHECK(cudaGetDeviceFlags(&flags));  // the context exists already: open_run made it
  const bool map_host = (flags & cudaDeviceMapHost) != 0;

  cml::Table facts("mapped_setup", {"query", "answer", "what it means"});
  facts.row({"cudaDevAttrCanMapHostMemory", std::to_string(can_map),
             can_map ? "kernels may load and store page-locked host memory" : "no mapped memory on this GPU"});
  facts.row({"cudaDevAttrUnifiedAddressing", std::to_string(unified),
             unified ? "one address space: a pinned host pointer is also its device pointer"
                     : "device pointers differ: cudaHostGetDevicePointer gives the kernel's"});
  facts.row({"cudaDevAttrIntegrated", std::to_string(integrated),
             integrated ? "the GPU uses the CPU's memory: mapped memory saves the copy altogether"
                        : "a discrete GPU: every mapped access crosses the link to host memory"});
  facts.row({"cudaGetDeviceFlags has cudaDeviceMapHost", yes_no(map_host),
             map_host ? "this context maps pinned allocations for the device"
                      : "cudaHostAllocMapped has no effect in this context"});
  c.run.emit(facts);
  std::printf(integrated ? "This GPU is integrated: host and device memory are the same memory, so a kernel on\n"
                           "mapped memory avoids a copy; the course has measured no integrated GPU.\n"
                         : "This GPU is discrete: every mapped access crosses the link, so it pays only\n"
                           "for data read or written once, in coalesced accesses (modes zerocopy, mapped-access,\n"
                           "mapped-overlap).\n");
  if (!can_map) {
    std::printf("SKIP: canMapHostMemory = 0: no kernel can read host memory here\n");
    return true;
  }

  // Pinned memory without cudaHostAllocMapped: what cudaMallocHost gives.
  const std::size_t n = (4u << 20) / sizeof(std::uint32_t);
  cml::PinnedBuffer<std::uint32_t> pinned(n, cudaHostAllocDefault);
  const unsigned long long expect = fill_words(pinned.data(), n, 17);
  cudaPointerAttributes attr{};
  CUDA_CHECK(cudaPointerGetAttributes(&attr, pinned.data()));
  void* mapped = nullptr;
  const cudaError_t got_pointer = cudaHostGetDevicePointer(&mapped, pinned.data(), 0);
  if (got_pointer != cudaSuccess) (void)cudaGetLastError();  // an answer to show, not a failure

  cml::Table pointers("mapped_pointer", {"call on cudaMallocHost memory", "says", "equals the host pointer"});
  pointers.row({"cudaPointerGetAttributes: type", pointer_kind(pinned.data()), "-"});
  pointers.row({"cudaPointerGetAttributes: devicePointer", attr.devicePointer ? "an address for kernels" : "null",
                yes_no(attr.devicePointer == pinned.data())});
  const bool answered = got_pointer == cudaSuccess;
  pointers.row({"cudaHostGetDevicePointer", answered ? "an address for kernels" : cudaGetErrorName(got_pointer),
                answered ? yes_no(mapped == pinned.data()) : "-"});
  c.run.emit(pointers);

  bool ok = true;
  if (unified && (attr.devicePointer != pinned.data() || (answered && mapped != pinned.data()))) {
    std::printf(
        "FAILED: this GPU reports unified addressing, yet the device's pointer to cudaMallocHost\n"
        "memory is not its host pointer\n");
    ok = false;
  }
  if (!unified && !answered) {
    std::printf("no unified addressing and no device pointer: this allocation cannot be read by a kernel\n");
    return ok;
  }
  // The kernel gets the host pointer itself where addressing is unified.
  const auto* words = static_cast<const std::uint32_t*>(unified ? static_cast<void*>(pinned.data()) : mapped);
  cml::DeviceBuffer<unsigned long long> sum(1);
  CUDA_CHECK(cudaMemsetAsync(sum.data(), 0, sizeof(unsigned long long), c.stream));
  launch_sum(words, n, 1, sum.data(), c.stream);
  const unsigned long long got = read_sum(sum.data(), c.stream);
  ok &= cml::report(cml::compare_exact(&got, &expect, 1),
                    std::string("a kernel's sum of cudaMallocHost memory through its ") +
                        (unified ? "host pointer" : "cudaHostGetDevicePointer pointer"));
  return ok;
}

}  // namespace ch01
