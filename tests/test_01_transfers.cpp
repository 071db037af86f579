// Chapter 01 — host<->device transfers: the tests of exercise.cu, step by step. Each step is
// checked for its result, for its mechanism (CUPTI: what kind of memory a copy came from,
// how many copies ran; pointer attributes) and, where the step is about speed, for a speed
// ratio measured in this process.
//
//   ./lab check 01                        against your exercise.cu
//   meson test -C build "ch01 solution"   against the solution
#include "gpu.hpp"
#include "harness.hpp"
#include "pinned.hpp"
#include "transfers.cuh"

#include "cml/buffers.hpp"
#include "cml/stream.hpp"
#include "cml/timing.hpp"
#include "cml/trace.hpp"

#include <cstring>
#include <memory>
#include <string>
#include <vector>

using cml::test::is_pinned;
using cml::trace::CopyKind;
using cml::trace::MemoryKind;

namespace {

using Pinned = ch01::LearnerPinned;

// Host -> device -> host through `host`, on the legacy stream: every byte must come back.
void check_round_trip(std::byte* host, std::size_t n, unsigned seed) {
  cml::DeviceBuffer<std::byte> device(n);
  const auto r = ch01::round_trip(host, device.data(), ch01::pattern(n, seed), nullptr);
  INFO(r.describe());
  CHECK(r.ok);
}

// The kinds of memory the traced copies of one direction came from or went to.
std::string kinds_of(const std::vector<cml::trace::CopyRecord>& copies, bool source) {
  std::string out;
  for (const auto& c : copies) out += std::string(out.empty() ? "" : ", ") + cml::trace::to_string(source ? c.src : c.dst);
  return out.empty() ? "(no copy)" : out;
}

}  // namespace

// ---- Step 1 ------------------------------------------------------------------------------

TEST_CASE("step 1: data survives a round trip through allocate_pinned's buffer", "[ch01][step1][correctness]") {
  cml::test::device();
  for (const std::size_t n : {std::size_t{1}, std::size_t{4097}, std::size_t{(1u << 20) + 3}}) {
    CAPTURE(n);
    Pinned buf(n);
    check_round_trip(buf.p, n, 11);
  }
}

TEST_CASE("step 1: allocate_pinned returns page-locked memory that copies read directly", "[ch01][step1][mechanism]") {
  cml::test::device();
  CML_REQUIRE_TRACING();
  const std::size_t n = (4u << 20) + 5;
  Pinned buf(n);
  INFO("allocate_pinned returned pageable memory: allocate it with cudaMallocHost or cudaHostAlloc, "
       "and free it with cudaFreeHost (step 1; ./lab hint 01)");
  REQUIRE(is_pinned(buf.p));

  cml::DeviceBuffer<std::byte> device(n);
  cml::Stream stream;
  cml::trace::Recorder recorder;
  CUDA_CHECK(cudaMemcpyAsync(device.data(), buf.p, n, cudaMemcpyHostToDevice, stream));
  CUDA_CHECK(cudaMemcpyAsync(buf.p, device.data(), n, cudaMemcpyDeviceToHost, stream));
  const auto t = recorder.stop();
  CML_REQUIRE_TRACE_OK(t);
  const auto h2d = t.copies_of(CopyKind::HtoD);
  const auto d2h = t.copies_of(CopyKind::DtoH);
  REQUIRE(h2d.size() == 1);
  REQUIRE(d2h.size() == 1);
  INFO("the copy engine saw: host-to-device from " << kinds_of(h2d, true) << ", device-to-host into "
                                                  << kinds_of(d2h, false));
  CHECK(h2d[0].src == MemoryKind::Pinned);
  CHECK(d2h[0].dst == MemoryKind::Pinned);
}

TEST_CASE("step 1: copies from pinned memory are faster than from pageable memory", "[ch01][step1][perf]") {
  cml::test::device();
  const std::size_t n = 64u << 20;
  Pinned pinned(n);
  std::unique_ptr<std::byte[]> pageable(new std::byte[n]);
  std::memset(pageable.get(), 1, n);
  std::memset(pinned.p, 1, n);
  cml::DeviceBuffer<std::byte> device(n);
  cml::Stream stream;
  const auto stats = cml::time_interleaved(
      {[&](cudaStream_t s) { CUDA_CHECK(cudaMemcpyAsync(device.data(), pinned.p, n, cudaMemcpyHostToDevice, s)); },
       [&](cudaStream_t s) { CUDA_CHECK(cudaMemcpyAsync(device.data(), pageable.get(), n, cudaMemcpyHostToDevice, s)); }},
      stream, {2, 10});
  const double speedup = stats[1].median_ms / stats[0].median_ms;
  INFO("64 MiB host-to-device: allocate_pinned's buffer " << cml::gbps(n, stats[0].median_ms) << " GB/s, pageable "
       << cml::gbps(n, stats[1].median_ms) << " GB/s; pageable time / pinned time " << cml::ratio_text(stats[1], stats[0])
       << "; want at least 1.3 (step 1)");
  CHECK(speedup >= 1.3);
}

// ---- Step 2 ------------------------------------------------------------------------------

TEST_CASE("step 2: data survives a round trip through a registered buffer", "[ch01][step2][correctness]") {
  cml::test::device();
  const std::size_t n = (2u << 20) + 123;
  std::vector<std::byte> buf(n);
  ch01::pin_existing(buf.data(), n);
  check_round_trip(buf.data(), n, 12);
  ch01::unpin_existing(buf.data());
}

TEST_CASE("step 2: pin_existing makes a buffer copy as pinned memory, and unpin_existing undoes it", "[ch01][step2][mechanism]") {
  cml::test::device();
  CML_REQUIRE_TRACING();
  const std::size_t n = (4u << 20) + 77;
  std::vector<std::byte> buf(n, std::byte{3});
  ch01::pin_existing(buf.data(), n);
  {
    INFO("after pin_existing the buffer is still pageable: page-lock it in place with cudaHostRegister (step 2)");
    REQUIRE(is_pinned(buf.data()));
  }
  cml::DeviceBuffer<std::byte> device(n);
  cml::Stream stream;
  cml::trace::Recorder recorder;
  CUDA_CHECK(cudaMemcpyAsync(device.data(), buf.data(), n, cudaMemcpyHostToDevice, stream));
  const auto t = recorder.stop();
  ch01::unpin_existing(buf.data());
  CML_REQUIRE_TRACE_OK(t);
  const auto h2d = t.copies_of(CopyKind::HtoD);
  REQUIRE(h2d.size() == 1);
  INFO("the copy from the registered buffer came from " << kinds_of(h2d, true) << " memory");
  CHECK(h2d[0].src == MemoryKind::Pinned);
  INFO("after unpin_existing the buffer is still pinned: release it with cudaHostUnregister (step 2)");
  CHECK_FALSE(is_pinned(buf.data()));
}

// ---- Step 3 ------------------------------------------------------------------------------

TEST_CASE("step 3: send_batched puts every piece at its device offset", "[ch01][step3][correctness]") {
  cml::test::device();
  struct Shape { std::size_t count, piece; };
  for (const Shape shape : {Shape{1000, 4093}, Shape{1, 1}, Shape{37, 65536 + 16}, Shape{1024, 4096}, Shape{3000, 7}}) {
    CAPTURE(shape.count, shape.piece);
    ch01::PieceSet set(shape.count, shape.piece, 5);
    cml::Stream stream;
    const auto r = set.check([&](cudaStream_t s) { ch01::send_batched(set.batch, set.staging, s); }, stream);
    INFO(r.describe());
    CHECK(r.ok);
  }
}

TEST_CASE("step 3: send_batched moves all pieces in a few large copies from pinned staging", "[ch01][step3][mechanism]") {
  cml::test::device();
  CML_REQUIRE_TRACING();
  const std::size_t count = 1000, piece = 4093, total = count * piece;
  ch01::PieceSet set(count, piece, 6);
  cml::Stream stream;
  cml::trace::Recorder recorder;
  ch01::send_batched(set.batch, set.staging, stream);
  const auto t = recorder.stop();
  CML_REQUIRE_TRACE_OK(t);
  const auto h2d = t.copies_of(CopyKind::HtoD);
  std::uint64_t bytes = 0;
  for (const auto& c : h2d) bytes += c.bytes;
  // At least 64 KiB per copy on average: per-call cost no longer dominates.
  const std::size_t most = total / (64 * 1024);
  INFO("send_batched issued " << h2d.size() << " host-to-device copies for " << count << " pieces of " << piece
       << " bytes; want at most " << most << ": pack the pieces into staging.host and send them with one "
       << "cudaMemcpyAsync, then launch_unpack (step 3; ./lab hint 01)");
  REQUIRE(!h2d.empty());
  CHECK(h2d.size() <= most);
  INFO("host-to-device bytes: " << bytes << ", pieces hold " << total);
  CHECK(bytes == total);
  INFO("the batched copies came from " << kinds_of(h2d, true) << " memory: copy from staging.host, which is pinned");
  for (const auto& c : h2d) CHECK(c.src == MemoryKind::Pinned);
}

TEST_CASE("step 3: packing and one copy beat one cudaMemcpy per piece at least 5x", "[ch01][step3][perf]") {
  cml::test::device();
  ch01::PieceSet set(1024, 4096, 8);
  cml::Stream stream;
  const auto stats = cml::time_interleaved(
      {[&](cudaStream_t s) { ch01::send_one_by_one(set.batch, s, true); },
       [&](cudaStream_t s) { ch01::send_batched(set.batch, set.staging, s); }},
      stream, {2, 15}, cml::Clock::Host);
  const double speedup = stats[0].median_ms / stats[1].median_ms;
  INFO("1024 pieces of 4 KiB: one cudaMemcpy each " << cml::with_noise(stats[0]) << ", send_batched "
       << cml::with_noise(stats[1]) << "; one by one / batched " << cml::ratio_text(stats[0], stats[1])
       << "; want at least 5 (step 3)");
  CHECK(speedup >= 5.0);
}

// ---- Step 4 ------------------------------------------------------------------------------

namespace {
using ZeroCopyOwner = ch01::LearnerZeroCopy;
}  // namespace

TEST_CASE("step 4: a kernel reading the zero-copy buffer sees what the host wrote", "[ch01][step4][correctness]") {
  cml::test::device();
  if (!cml::test::device().can_map_host_memory) CML_SKIP("this GPU reports canMapHostMemory = 0");
  const std::size_t n = (1u << 20) + 7;
  ZeroCopyOwner buf(n * sizeof(std::uint32_t));
  const unsigned long long want = ch01::fill_words(static_cast<std::uint32_t*>(buf.z.host), n, 21);
  cml::DeviceBuffer<unsigned long long> sum(1);
  cml::Stream stream;
  ch01::sum_zero_copy(buf.z, n, 1, 1, sum.data(), stream);
  CHECK(ch01::read_sum(sum.data(), stream) == want);
}

TEST_CASE("step 4: the kernel reads mapped host memory directly, with no copy", "[ch01][step4][mechanism]") {
  cml::test::device();
  if (!cml::test::device().can_map_host_memory) CML_SKIP("this GPU reports canMapHostMemory = 0");
  CML_REQUIRE_TRACING();
  const std::size_t n = (4u << 20) + 3;
  ZeroCopyOwner buf(n * sizeof(std::uint32_t));
  ch01::fill_words(static_cast<std::uint32_t*>(buf.z.host), n, 21);
  {
    INFO("allocate_zero_copy's device pointer is not host memory: allocate with cudaHostAlloc(..., "
         "cudaHostAllocMapped) and get the device's view with cudaHostGetDevicePointer (step 4)");
    REQUIRE(is_pinned(buf.z.device));
  }
  cml::DeviceBuffer<unsigned long long> sum(1);
  cml::Stream stream;
  CUDA_CHECK(cudaMemsetAsync(sum.data(), 0, sizeof(unsigned long long), stream));
  cml::trace::Recorder recorder;
  ch01::prepare_for_device(buf.z, stream);
  ch01::launch_sum(static_cast<const std::uint32_t*>(buf.z.device), n, 1, sum.data(), stream);
  const auto t = recorder.stop();
  CML_REQUIRE_TRACE_OK(t);
  // The kernel's own record proves the trace saw this work: only then is "no copy" evidence.
  REQUIRE(t.kernels_named("sum_kernel").size() == 1);
  INFO("prepare_for_device and the kernel caused " << t.copies.size() << " copies: with mapped memory "
       << "the kernel reads the host's bytes itself, so there is nothing to copy (step 4)");
  CHECK(t.copies.empty());
}
