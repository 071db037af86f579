// Chapter 01 — host<->device transfers: the tests of exercise.cu, step by step. Each step is
// checked for its result through your own code's path, for its mechanism (CUPTI: what kind
// of memory a copy came from, how many copies ran and on which stream; the runtime calls
// your functions made; pointer attributes) and, where the step is about speed, for a speed
// ratio measured in this process. "Returns at once" and "only enqueues" are judged against
// a gate kernel that holds the stream shut until the test opens it (tests/support/gate.hpp,
// enqueue_only.hpp): a call that waits for the GPU returns only once the gate gives up.
//
//   ./lab check 01                        against your exercise.cu
//   meson test -C build "ch01 solution"   against the solution
//   build/tests/test_ch01_solution "[.measure]"   both sides of the speed bars
//                                         (docs/01_transfers.md, "Speed bars")

#include "test_01_transfers.hpp"

using cml::test::is_pinned;
using cml::trace::CopyKind;
using cml::trace::MemoryKind;

namespace {

// What each bar assumes of the hardware, and what a smaller GPU changes: docs/every-gpu.md.
// The speed bars sit mid-gap between the slowest correct answer and the fastest taught
// mistake, five runs each (build/tests/test_ch01_solution "[.measure]"); speed-ups spread
// over a wide range, so "mid" is the geometric middle of the two sides. The measurements
// behind them: docs/01_transfers.md, "Speed bars: the measurements behind them".
// 64 MiB host-to-device, pageable time over the learner's buffer's time. What pinning buys
// depends on the machine (the link against the host's own copy into the driver's staging:
// 6.5-7x on the H100's PCIe 5 host; a PCIe 3 host may show under 2x), so the bar is the
// geometric middle of this machine's own gap, measured in the same run: pageable memory
// (the mistake, 1.0 by construction) against a cudaMallocHost buffer (the ceiling).
// Where that gap is under kMinPinnedGap, speed cannot tell the two apart: the test says so
// and leaves pinning to the mechanism test.
constexpr double kMinPinnedGap = 1.3;
// 1024 x 4 KiB, one cudaMemcpy per piece over send_batched: the slowest correct send (one
// thread packs, one copy) against the fastest taught mistake (one cudaMemcpyAsync per
// piece), which gave at most 3.71x on the H100.
constexpr double kBatchBar = 7.0;

}  // namespace

// ---- Step 1 ------------------------------------------------------------------------------

TEST_CASE("step 1: an asynchronous round trip through allocate_pinned's buffer returns at once and is exact",
          "[ch01][step1][correctness]") {
  check_async_round_trips<Pinned>(11,
                                  "cudaMemcpyAsync into allocate_pinned's buffer waited for the work queued before "
                                  "it: with pageable memory the copy cannot be asynchronous. Allocate page-locked "
                                  "memory (step 1; ./lab hint 01)");
}

TEST_CASE("step 1: an asynchronous round trip through a buffer pinned in place returns at once and is exact",
          "[ch01][step1][correctness]") {
  check_async_round_trips<Registered>(12,
                                      "cudaMemcpyAsync into a buffer after pin_existing waited for the work queued "
                                      "before it: the buffer is still pageable. Page-lock the range in place "
                                      "(step 1; ./lab hint 01)");
}

TEST_CASE(
    "step 1: allocate_pinned returns page-locked memory that copies read directly, and free_pinned releases it with "
    "cudaFreeHost",
    "[ch01][step1][mechanism]") {
  cml::test::device();
  CML_REQUIRE_TRACING();
  const std::size_t n = (4u << 20) + 5;
  Pinned buf(n);
  {
    INFO("allocate_pinned returned pageable memory: allocate page-locked memory (step 1; ./lab hint 01)");
    REQUIRE(is_pinned(buf.p));
  }
  {
    unsigned flags = 0;
    CUDA_CHECK(cudaHostGetFlags(&flags, buf.p));
    INFO(
        "allocate_pinned's memory is write-combined (cudaHostAllocWriteCombined): the round trips read results "
        "back into it, and a CPU read of write-combined memory bypasses its caches — many times slower than one of "
        "ordinary pinned memory. Write-combining suits a buffer the host only writes; keep the default flags here "
        "(step 1; ./lab hint 01)");
    CHECK((flags & cudaHostAllocWriteCombined) == 0);
  }
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
  {
    INFO("the copy engine saw: host-to-device from " << kinds_of(h2d, true) << ", device-to-host into "
                                                     << kinds_of(d2h, false) << " (step 1)");
    CHECK(h2d[0].src == MemoryKind::Pinned);
    CHECK(d2h[0].dst == MemoryKind::Pinned);
  }
  const Released r = released([&] { ch01::free_pinned(buf.p); }, kFreePinnedCrash);
  const auto& calls = r.calls;
  if (r.threw.empty()) buf.p = nullptr;
  CML_REQUIRE_API_OK(calls);
  const int freed = cml::test::count_calls(calls, "cudaFreeHost");
  const int device_frees = cml::test::count_calls(calls, "cudaFree");
  INFO("free_pinned made "
       << freed << " cudaFreeHost and " << device_frees << " cudaFree call(s)" << threw_text(r)
       << ": page-locked memory stays locked until cudaFreeHost releases it; cudaFree is for device memory and "
          "refuses it (step 1)");
  CHECK(freed == 1);
  CHECK(device_frees == 0);
  CHECK(r.threw.empty());
}

TEST_CASE(
    "step 1: pin_existing makes a buffer copy as pinned memory, and unpin_existing undoes it with cudaHostUnregister",
    "[ch01][step1][mechanism]") {
  cml::test::device();
  CML_REQUIRE_TRACING();
  const std::size_t n = (4u << 20) + 77;
  std::vector<std::byte> buf(n, std::byte{3});
  cml::api::Recorder pin_calls;
  ch01::pin_existing(buf.data(), n);
  const auto pinning = pin_calls.stop();
  CML_REQUIRE_API_OK(pinning);
  const bool pinned = is_pinned(buf.data());
  {
    INFO("after pin_existing the buffer is still pageable: page-lock the range in place (step 1; ./lab hint 01)");
    REQUIRE(pinned);
  }
  {
    INFO(
        "after pin_existing the end of the range is still pageable: `bytes` is a length in bytes, and the whole "
        "range [p, p + bytes) must be locked (step 1)");
    CHECK(is_pinned(buf.data() + n - 1));
  }
  {
    INFO("pin_existing allocated memory (" << cml::test::count_calls(pinning, "cudaMallocHost") << " cudaMallocHost, "
                                           << cml::test::count_calls(pinning, "cudaHostAlloc")
                                           << " cudaHostAlloc): lock the pages the program "
                                              "already has, with no new buffer and no copy (step 1)");
    CHECK(cml::test::count_calls(pinning, "cudaMallocHost") + cml::test::count_calls(pinning, "cudaHostAlloc") == 0);
  }
  cml::DeviceBuffer<std::byte> device(n);
  cml::Stream stream;
  cml::trace::Recorder recorder;
  CUDA_CHECK(cudaMemcpyAsync(device.data(), buf.data(), n, cudaMemcpyHostToDevice, stream));
  const auto t = recorder.stop();
  const Released r = released([&] { ch01::unpin_existing(buf.data()); }, kUnpinCrash);
  const auto& calls = r.calls;
  CML_REQUIRE_TRACE_OK(t);
  CML_REQUIRE_API_OK(calls);
  const auto h2d = t.copies_of(CopyKind::HtoD);
  REQUIRE(h2d.size() == 1);
  {
    INFO("the copy from the registered buffer came from " << kinds_of(h2d, true) << " memory (step 1)");
    CHECK(h2d[0].src == MemoryKind::Pinned);
  }
  INFO("unpin_existing made " << cml::test::count_calls(calls, "cudaHostUnregister")
                              << " cudaHostUnregister call(s) and "
                                 "the buffer is "
                              << (is_pinned(buf.data()) ? "still pinned" : "pageable") << threw_text(r)
                              << ": what is registered must be "
                                 "unregistered, once, or the pages stay locked (step 1)");
  CHECK(cml::test::count_calls(calls, "cudaHostUnregister") == 1);
  CHECK_FALSE(is_pinned(buf.data()));
  CHECK(r.threw.empty());
}

TEST_CASE(
    "step 1: every allocate_pinned call gives page-locked memory of its own, and free_pinned frees the one it is given",
    "[ch01][step1][mechanism]") {
  cml::test::device();
  CML_REQUIRE_TRACING();
  const std::vector<std::size_t> sizes = {4097, 1, (std::size_t{1} << 20) + 3};
  std::vector<std::byte*> got;
  std::vector<cml::test::Range> ranges;
  for (const std::size_t n : sizes) {
    got.push_back(static_cast<std::byte*>(ch01::allocate_pinned(n)));
    ranges.push_back({got.back(), n});
  }
  const std::string shared = cml::test::shared_ranges(ranges, "allocate_pinned's buffer");
  {
    INFO(shared << ": every call allocates a buffer of its own — one kept from an earlier call (a function-static) is "
                   "another caller's, and the first free_pinned frees both (step 1; ./lab hint 01)");
    REQUIRE(shared.empty());
  }
  for (std::size_t i = 0; i < got.size(); ++i) {
    INFO("the buffer of call " << i + 1 << " (" << sizes[i]
                               << " bytes) is not page-locked to its end: every call "
                                  "allocates page-locked memory of the size it is asked for (step 1)");
    CHECK((is_pinned(got[i]) && is_pinned(got[i] + sizes[i] - 1)));
  }
  for (std::size_t i = 0; i < got.size(); ++i) {
    const Released r = released([&] { ch01::free_pinned(got[i]); }, kFreePinnedCrash);
    CML_REQUIRE_API_OK(r.calls);
    std::size_t mine = 0, others = 0;
    for (const auto& c : r.calls.calls)
      if (cml::test::base_name(c.name) == "cudaFreeHost") (c.ptr == got[i] ? mine : others)++;
    INFO("free_pinned of call " << i + 1 << "'s buffer made " << mine << " cudaFreeHost of it and " << others
                                << " of other memory" << threw_text(r)
                                << ": it releases the buffer it is given, once (step 1)");
    CHECK(mine == 1);
    CHECK(others == 0);
    CHECK(r.threw.empty());
  }
}

TEST_CASE("step 1: pin_existing pins each range it is given, whole, and unpin_existing unpins that one only",
          "[ch01][step1][mechanism]") {
  cml::test::device();
  CML_REQUIRE_TRACING();
  const std::vector<std::size_t> sizes = {(std::size_t{1} << 20) + 77, 4099, (std::size_t{3} << 20) + 1};
  std::vector<std::vector<std::byte>> buffers;
  for (const std::size_t n : sizes) buffers.emplace_back(n, std::byte{5});
  cml::api::Recorder pin_calls;
  for (auto& b : buffers) ch01::pin_existing(b.data(), b.size());
  const auto pinning = pin_calls.stop();
  CML_REQUIRE_API_OK(pinning);
  std::vector<bool> pinned;
  std::vector<std::size_t> registered;
  for (std::size_t i = 0; i < buffers.size(); ++i) {
    pinned.push_back(is_pinned(buffers[i].data()) && is_pinned(buffers[i].data() + sizes[i] - 1));
    registered.push_back(0);
    for (const auto& c : pinning.calls)
      if (cml::test::base_name(c.name) == "cudaHostRegister" && c.ptr == buffers[i].data()) ++registered.back();
  }
  const bool any = std::find(pinned.begin(), pinned.end(), true) != pinned.end();
  for (std::size_t i = 0; i < buffers.size(); ++i) {
    INFO("after pin_existing on "
         << buffers.size() << " ranges, range " << i + 1 << " (" << sizes[i] << " bytes) is "
         << (pinned[i] ? "pinned" : "not pinned to its end") << ", registered " << registered[i] << " time(s): "
         << (any ? "every call pins the range it is given — a registration done once per process (a function-static "
                   "flag, std::call_once) pins the first range only"
                 : "page-lock the range in place")
         << " (step 1; ./lab hint 01)");
    CHECK(pinned[i]);
    CHECK(registered[i] == 1);
    const bool kept = std::all_of(buffers[i].begin(), buffers[i].end(), [](std::byte b) { return b == std::byte{5}; });
    INFO("range " << i + 1
                  << " no longer holds what the program wrote there before pin_existing: pinning locks "
                     "the pages in place and keeps their contents — touching them is not needed, and writing them "
                     "destroys the program's data (step 1; ./lab hint 01)");
    CHECK(kept);
  }
  for (std::size_t i = 0; i < buffers.size(); ++i) {
    if (!pinned[i]) continue;  // what was never pinned cannot be unpinned
    const Released r = released([&] { ch01::unpin_existing(buffers[i].data()); }, kUnpinCrash);
    CML_REQUIRE_API_OK(r.calls);
    std::size_t mine = 0, others = 0;
    for (const auto& c : r.calls.calls)
      if (cml::test::base_name(c.name) == "cudaHostUnregister") (c.ptr == buffers[i].data() ? mine : others)++;
    INFO("unpin_existing of range " << i + 1 << " made " << mine << " cudaHostUnregister of it and " << others
                                    << " of other ranges" << threw_text(r)
                                    << ": it undoes the registration of the range it is given (step 1)");
    CHECK(mine == 1);
    CHECK(others == 0);
    CHECK(r.threw.empty());
    CHECK_FALSE(is_pinned(buffers[i].data()));
    for (std::size_t j = i + 1; j < buffers.size(); ++j) {
      INFO("unpin_existing of range " << i + 1 << " left range " << j + 1
                                      << " pageable: it unpins that one only (step 1)");
      CHECK((!pinned[j] || is_pinned(buffers[j].data())));
    }
  }
}

TEST_CASE("step 1: copies from pinned memory are faster than from pageable memory", "[ch01][step1][perf]") {
  cml::test::device();
  const std::size_t n = 64u << 20;
  Pinned pinned(n);
  std::unique_ptr<std::byte[]> pageable(new std::byte[n]);
  cml::PinnedBuffer<std::byte> reference(n);  // the ceiling: page-locked by the runtime itself
  std::memset(pageable.get(), 1, n);
  std::memset(pinned.p, 1, n);
  std::memset(reference.data(), 1, n);
  cml::DeviceBuffer<std::byte> device(n);
  cml::Stream stream;
  const auto copy_from = [&](const std::byte* src) {
    return [&, src](cudaStream_t s) { CUDA_CHECK(cudaMemcpyAsync(device.data(), src, n, cudaMemcpyHostToDevice, s)); };
  };
  const auto stats = cml::time_interleaved(
      {copy_from(pinned.p), copy_from(pageable.get()), copy_from(reference.data())}, stream, {2, 10});
  const double speedup = stats[1].median_ms / stats[0].median_ms;
  const double gap = stats[1].median_ms / stats[2].median_ms;  // what pinning buys on this machine
  const double bar = std::sqrt(gap);
  INFO("64 MiB host-to-device: allocate_pinned's buffer "
       << cml::gbps(n, stats[0].median_ms) << " GB/s, pageable " << cml::gbps(n, stats[1].median_ms)
       << " GB/s, a cudaMallocHost buffer " << cml::gbps(n, stats[2].median_ms) << " GB/s; pageable time / yours "
       << cml::ratio_text(stats[1], stats[0]) << "; want at least " << cml::fixed(bar, 2)
       << " (the geometric middle of this machine's gap, " << cml::fixed(gap, 2)
       << "): allocate page-locked memory (step 1)");
  if (gap < kMinPinnedGap)
    CML_SKIP("on this machine pinned memory copies only " + cml::fixed(gap, 2) +
             "x as fast as pageable memory (the link is not much faster than the host's own copy): too narrow a gap "
             "for speed to tell them apart; the mechanism test checks that the buffer is pinned");
  CHECK(speedup >= bar);
}

// ---- Step 2 ------------------------------------------------------------------------------

TEST_CASE("step 2: send_batched puts every piece at its device offset", "[ch01][step2][correctness]") {
  cml::test::device();
  struct Shape {
    std::size_t count, piece;
  };
  std::vector<Shape> shapes = {{1000, 4093}, {1, 1},        {37, 65536 + 16},    {1024, 4096},
                               {3000, 7},    {2, 1u << 20}, {3, (3u << 19) + 12}};  // a piece over 1 MiB
  // And shapes from a seed that changes every run (printed), so no size can be special-cased.
  const unsigned seed = std::random_device{}();
  CAPTURE(seed);
  std::minstd_rand rng(seed);
  for (int i = 0; i < 3; ++i) shapes.push_back({1 + rng() % 3000, 1 + rng() % 20000});
  for (const Shape shape : shapes) {
    CAPTURE(shape.count, shape.piece);
    ch01::PieceSet set(shape.count, shape.piece, seed + static_cast<unsigned>(shape.count));
    cml::Stream stream;
    const auto r = set.check([&](cudaStream_t s) { ch01::send_batched(set.batch, set.staging, s); }, stream);
    INFO(r.describe() << " (piece i goes from host_base + host_offsets[i] to device_base + device_offsets[i]: step 2)");
    CHECK(r.ok);
  }
}

TEST_CASE(
    "step 2: send_batched moves all pieces in a few large copies from pinned staging, then unpacks them on the GPU",
    "[ch01][step2][mechanism]") {
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
  {
    INFO("send_batched issued " << h2d.size() << " host-to-device copies for " << count << " pieces of " << piece
                                << " bytes; want at most " << most
                                << ": the fixed cost of a copy call is paid per call, so pack the pieces "
                                   "and send them in a few copies (step 2; ./lab hint 01)");
    REQUIRE(!h2d.empty());
    REQUIRE(h2d.size() <= most);
  }
  {
    INFO("host-to-device bytes: " << bytes << ", pieces hold " << total << " (staging.bytes, " << set.staging.bytes
                                  << ", is at least that, not exactly): send the pieces' bytes, once (step 2)");
    CHECK(bytes == total);
  }
  for (const auto& c : h2d) {
    INFO("a batched copy came from " << cml::trace::to_string(c.src)
                                     << " memory: copy from staging.host, which is "
                                        "pinned (step 2)");
    CHECK(c.src == MemoryKind::Pinned);
  }
  const auto unpacks = t.kernels_named("unpack_kernel");
  INFO("the trace shows " << unpacks.size()
                          << " unpack kernel(s): the pieces reach their offsets on the GPU, "
                             "through launch_unpack (step 2)");
  CHECK(!unpacks.empty());
}

// Both of the solution's paths: one thread packs a small batch, the pool's threads pack and
// send a large one, each copy from its own thread: every copy must still go on `stream`.
TEST_CASE("step 2: send_batched runs its copies, kernels and memsets on the stream it is given, and nothing elsewhere",
          "[ch01][step2][mechanism]") {
  CML_REQUIRE_TRACING();
  cml::test::device();
  struct Shape {
    std::size_t count, piece;
  };
  for (const Shape shape : {Shape{1000, 4093}, Shape{7, 1001}}) {
    CAPTURE(shape.count, shape.piece);
    ch01::PieceSet set(shape.count, shape.piece, 9);
    cml::Stream stream;
    CUDA_CHECK(cudaDeviceSynchronize());
    cml::trace::Recorder recorder;
    ch01::send_batched(set.batch, set.staging, stream);
    const auto t = recorder.stop();
    CML_REQUIRE_TRACE_OK(t);
    {
      INFO("the trace shows " << t.kernels_named("unpack_kernel").size() << " unpack kernel(s) and "
                              << t.copies_of(CopyKind::HtoD).size()
                              << " host-to-device copies: the pieces go to the GPU by copies, and "
                                 "to their offsets through launch_unpack (step 2)");
      REQUIRE(!t.kernels_named("unpack_kernel").empty());
      REQUIRE(!t.copies_of(CopyKind::HtoD).empty());
    }
    const std::string elsewhere = cml::test::work_elsewhere(t, stream);
    INFO("send_batched: "
         << elsewhere
         << ". Enqueue everything on `stream` (every cudaMemcpyAsync, memset and "
            "launch gets it as its stream argument, from whichever thread issues it), so the caller's synchronisation "
            "covers it and stream order puts the unpack after the copies (step 2; ./lab hint 01)");
    CHECK(elsewhere.empty());
  }
}

// What the unpack kernel reads is the point of the copy before it: the pieces, packed in
// pinned staging.host, cross the bus once, in a few large copies, into staging.device,
// and the kernel reads them there. A kernel handed staging.host reads pinned memory over
// the bus instead: the pieces still land right and the copies still run (for nothing).
TEST_CASE(
    "step 2: the unpack kernel reads the packed pieces from staging.device, where the copy put them, not from pinned "
    "host memory",
    "[ch01][step2][mechanism]") {
  cml::test::device();
  CML_REQUIRE_TRACING();
  struct Shape {
    std::size_t count, piece;
  };
  for (const Shape sh : {Shape{1000, 4093}, Shape{16, 4093}, Shape{3, 7}}) {
    CAPTURE(sh.count, sh.piece);
    ch01::PieceSet set(sh.count, sh.piece, 9);
    cml::Stream stream;
    cml::test::Recorded rec;
    {
      // unpack_kernel(const std::byte* packed, ...): its first parameter is a pointer.
      cml::api::Recorder recorder({{"unpack_kernel", 1}});
      try {
        ch01::send_batched(set.batch, set.staging, stream);
      } catch (const std::exception& e) {
        rec.threw = e.what();
      }
      rec.calls = recorder.stop();
    }
    CUDA_CHECK(cudaStreamSynchronize(stream));
    CML_REQUIRE_API_OK(rec.calls);
    {
      INFO("send_batched threw: " << rec.threw);
      REQUIRE(rec.threw.empty());
    }
    const auto unpacks = cml::test::kernel_launches(rec.calls, "unpack_kernel");
    {
      INFO(
          "send_batched launched no unpack kernel: the pieces reach their offsets on the GPU, through launch_unpack "
          "(step 2)");
      REQUIRE(!unpacks.empty());
    }
    for (const auto& k : unpacks) {
      const void* packed = k.pointers[0];
      INFO("the unpack kernel read the packed pieces from "
           << (cml::test::within(packed, set.staging.host, set.staging.bytes)
                   ? "staging.host, pinned host memory, over the bus: pinned memory is visible to the GPU, so the "
                     "pieces land right and the copies run, for nothing"
                   : "memory outside staging.device")
           << ". The copy brings the packed pieces to staging.device; hand launch_unpack that (step 2; ./lab hint 01)");
      CHECK(cml::test::within(packed, set.staging.device, set.staging.bytes));
    }
  }
}

TEST_CASE(
    "step 2: send_batched only enqueues: it returns while a gate kernel holds its stream shut, and makes no blocking "
    "call",
    "[ch01][step2][mechanism]") {
  cml::test::device();
  CML_REQUIRE_TRACING();
  ch01::PieceSet set(1000, 4093, 7);
  cml::Stream stream;
  CUDA_CHECK(cudaMemsetAsync(set.device.data(), 0xEE, set.device.bytes(), stream));
  stream.synchronize();
  const cml::test::Enqueued e =
      cml::test::watch_enqueue({stream.get()}, [&] { ch01::send_batched(set.batch, set.staging, stream); });
  CML_CHECK_ONLY_ENQUEUED(e, "send_batched",
                          "Enqueue everything on `stream` with asynchronous calls; the caller synchronises (step 2; "
                          "./lab hint 01)",
                          "(step 2)");
  // The copies ran only after send_batched had returned: what they read from staging is what
  // the host left there, so staging reused before its copy ran shows here, on any link.
  stream.synchronize();
  std::vector<std::byte> got(set.device.size());
  CUDA_CHECK(cudaMemcpy(got.data(), set.device.data(), set.device.bytes(), cudaMemcpyDeviceToHost));
  const auto r = cml::compare_exact(got.data(), set.want.data(), got.size());
  INFO(r.describe() << " after the copies had waited behind other work on the stream: staging the CPU wrote again "
                       "before the copy that reads it had run (a slot reused too early). Every staged byte stays "
                       "untouched until its copy has run: give each copy its own part of staging (step 2; ./lab "
                       "hint 01)");
  CHECK(r.ok);
}

TEST_CASE("step 2: packing and a few copies beat one cudaMemcpy per piece", "[ch01][step2][perf]") {
  cml::test::device();
  ch01::PieceSet set(1024, 4096, 8);
  cml::Stream stream;
  const auto stats = cml::time_interleaved({[&](cudaStream_t s) { ch01::send_one_by_one(set.batch, s, true); },
                                            [&](cudaStream_t s) { ch01::send_batched(set.batch, set.staging, s); }},
                                           stream, {2, 15}, cml::Clock::Host);
  const double speedup = stats[0].median_ms / stats[1].median_ms;
  INFO("1024 pieces of 4 KiB: one cudaMemcpy each "
       << cml::with_noise(stats[0]) << ", send_batched " << cml::with_noise(stats[1]) << "; one by one / batched "
       << cml::ratio_text(stats[0], stats[1]) << "; want at least " << kBatchBar
       << ": pay the copy call's fixed cost once, not per piece (step 2)");
  CHECK(speedup >= kBatchBar);
}

// ---- Step 3 ------------------------------------------------------------------------------

TEST_CASE("step 3: a kernel reading the zero-copy buffer sees what the host wrote", "[ch01][step3][correctness]") {
  cml::test::device();
  const unsigned seed = std::random_device{}();
  CAPTURE(seed);
  std::minstd_rand rng(seed);
  for (const std::size_t n : {std::size_t{1}, (std::size_t{1} << 20) + 7, 1 + rng() % (std::size_t{4} << 20)}) {
    CAPTURE(n);
    ZeroCopyOwner buf(n * sizeof(std::uint32_t));
    const unsigned long long want = ch01::fill_words(static_cast<std::uint32_t*>(buf.z.host), n, seed);
    cml::DeviceBuffer<unsigned long long> sum(1);
    cml::Stream stream;
    ch01::sum_zero_copy(buf.z, n, 1, 1, sum.data(), stream);
    INFO(
        "the kernel's sum over the device view of the buffer differs from the host's: `device` must show the same "
        "bytes as `host` (step 3)");
    CHECK(ch01::read_sum(sum.data(), stream) == want);
  }
}

TEST_CASE(
    "step 3: the kernel reads mapped host memory directly, with no copy, and prepare_for_device only enqueues, on its "
    "stream alone",
    "[ch01][step3][mechanism]") {
  cml::test::device();
  CML_REQUIRE_TRACING();
  const std::size_t n = (4u << 20) + 3;
  ZeroCopyOwner buf(n * sizeof(std::uint32_t));
  ch01::fill_words(static_cast<std::uint32_t*>(buf.z.host), n, 21);
  {
    INFO(
        "allocate_zero_copy's device pointer is not host memory: the kernel must read the host's buffer itself, "
        "through a device view of mapped page-locked memory (step 3; ./lab hint 01)");
    REQUIRE(is_pinned(buf.z.device));
  }
  cml::DeviceBuffer<unsigned long long> sum(1);
  cml::Stream stream;
  CUDA_CHECK(cudaMemsetAsync(sum.data(), 0, sizeof(unsigned long long), stream));
  stream.synchronize();  // done before the recording starts: any memset in it is prepare_for_device's
  // prepare_for_device and the kernel it prepares for, while a gate holds the stream shut:
  // launch_sum waits for nothing, so a wait or a blocking call is prepare_for_device's.
  const cml::test::Enqueued e = cml::test::watch_enqueue({stream.get()}, [&] {
    ch01::prepare_for_device(buf.z, stream);
    ch01::launch_sum(static_cast<const std::uint32_t*>(buf.z.device), n, 1, sum.data(), stream);
  });
  const auto& t = e.trace;
  CML_REQUIRE_TRACE_OK(t);
  CML_CHECK_ONLY_ENQUEUED(e, "prepare_for_device",
                          "It only enqueues, and with zero-copy there is nothing to enqueue (step 3)",
                          "It only enqueues, and with zero-copy there is nothing to enqueue (step 3)");
  // The kernel's own record proves the trace saw this work: only then is "no copy" evidence.
  REQUIRE(t.kernels_named("sum_kernel").size() == 1);
  {
    INFO("prepare_for_device and the kernel caused "
         << t.copies.size()
         << " copies: with mapped memory "
            "the kernel reads the host's bytes itself, so there is nothing to copy (step 3)");
    CHECK(t.copies.empty());
  }
  {
    const std::string elsewhere = cml::test::work_elsewhere(t, stream);
    INFO("prepare_for_device: " << elsewhere
                                << ". Whatever it enqueues goes on the stream it is given, where the "
                                   "kernel that follows is ordered after it; with zero-copy that is nothing (step 3)");
    CHECK(elsewhere.empty());
  }
  INFO("prepare_for_device enqueued " << t.memsets.size() << " memset(s) and " << t.kernels.size() - 1
                                      << " kernel(s) of its own: with zero-copy there is nothing to prepare (step 3)");
  CHECK(t.memsets.empty());
  CHECK(t.kernels.size() == 1);
}

TEST_CASE("step 3: every allocate_zero_copy call maps a buffer of its own, its device view showing its own bytes",
          "[ch01][step3][mechanism]") {
  cml::test::device();
  const std::vector<std::size_t> words = {(std::size_t{1} << 18) + 3, 1001, (std::size_t{1} << 20) + 7};
  std::vector<std::unique_ptr<ZeroCopyOwner>> bufs;
  std::vector<cml::test::Range> hosts, devices;
  for (const std::size_t n : words) {
    bufs.push_back(std::make_unique<ZeroCopyOwner>(n * sizeof(std::uint32_t)));
    hosts.push_back({bufs.back()->z.host, n * sizeof(std::uint32_t)});
    devices.push_back({bufs.back()->z.device, n * sizeof(std::uint32_t)});
  }
  {
    const std::string shared = cml::test::shared_ranges(hosts, "allocate_zero_copy's host buffer");
    INFO(shared << ": every call allocates a buffer of its own (step 3; ./lab hint 01)");
    REQUIRE(shared.empty());
  }
  {
    const std::string shared = cml::test::shared_ranges(devices, "allocate_zero_copy's device pointer");
    INFO(shared
         << ": the device pointer of one buffer is the device view of another buffer — each call asks for the "
            "device view of the buffer it just allocated, not one kept from an earlier call (step 3; ./lab hint 01)");
    REQUIRE(shared.empty());
  }
  cml::DeviceBuffer<unsigned long long> sum(1);
  cml::Stream stream;
  for (std::size_t i = 0; i < bufs.size(); ++i) {
    const unsigned long long want =
        ch01::fill_words(static_cast<std::uint32_t*>(bufs[i]->z.host), words[i], 40 + static_cast<unsigned>(i));
    ch01::sum_zero_copy(bufs[i]->z, words[i], 1, 1, sum.data(), stream);
    INFO("buffer " << i + 1 << " of " << bufs.size()
                   << ": the kernel's sum over its device view differs from its "
                      "host bytes' sum: its `device` is not the device view of its own `host` (step 3)");
    CHECK(ch01::read_sum(sum.data(), stream) == want);
  }
}

TEST_CASE(
    "step 3: free_zero_copy releases the mapped buffer with cudaFreeHost, and nothing was allocated on the device",
    "[ch01][step3][mechanism]") {
  cml::test::device();
  CML_REQUIRE_TRACING();
  cml::api::Recorder alloc_calls;
  ZeroCopyOwner buf((std::size_t{1} << 20) + 9);
  const auto allocating = alloc_calls.stop();
  const Released r = released([&] { ch01::free_zero_copy(buf.z); }, kFreeZeroCopyCrash);
  const auto& calls = r.calls;
  buf.owned = !r.threw.empty();
  CML_REQUIRE_API_OK(allocating);
  CML_REQUIRE_API_OK(calls);
  {
    INFO("allocate_zero_copy called cudaMalloc "
         << cml::test::count_calls(allocating, "cudaMalloc")
         << " time(s): "
            "zero-copy needs no device buffer, the kernel reads the host's (step 3)");
    CHECK(cml::test::count_calls(allocating, "cudaMalloc") == 0);
  }
  INFO("free_zero_copy made " << cml::test::count_calls(calls, "cudaFreeHost") << " cudaFreeHost and "
                              << cml::test::count_calls(calls, "cudaFree") << " cudaFree call(s)" << threw_text(r)
                              << ": release the mapped buffer with "
                                 "cudaFreeHost, once (step 3)");
  CHECK(cml::test::count_calls(calls, "cudaFreeHost") == 1);
  CHECK(cml::test::count_calls(calls, "cudaFree") == 0);
  CHECK(r.threw.empty());
}

// Both sides of the speed bars, for the maintainer: five runs each. Not run by ./lab check.
TEST_CASE("step 2: measure both sides of the speed bars", "[ch01][step2][.measure]") {
  const auto& dev = cml::test::device();
  std::printf("device %s\n", dev.name.c_str());
  const std::size_t n = 64u << 20;
  Pinned pinned(n);
  std::unique_ptr<std::byte[]> pageable(new std::byte[n]), pageable2(new std::byte[n]);
  std::memset(pageable.get(), 1, n);
  std::memset(pageable2.get(), 1, n);
  std::memset(pinned.p, 1, n);
  cml::DeviceBuffer<std::byte> device(n);
  cml::Stream stream;
  for (int run = 0; run < 5; ++run) {
    const auto st = cml::time_interleaved(
        {[&](cudaStream_t s) { CUDA_CHECK(cudaMemcpyAsync(device.data(), pinned.p, n, cudaMemcpyHostToDevice, s)); },
         [&](cudaStream_t s) {
           CUDA_CHECK(cudaMemcpyAsync(device.data(), pageable.get(), n, cudaMemcpyHostToDevice, s));
         },
         [&](cudaStream_t s) {
           CUDA_CHECK(cudaMemcpyAsync(device.data(), pageable2.get(), n, cudaMemcpyHostToDevice, s));
         }},
        stream, {2, 10});
    std::printf("pinned-bar run %d pageable/allocate_pinned %.3f  pageable/pageable (the mistake) %.3f\n", run,
                st[1].median_ms / st[0].median_ms, st[1].median_ms / st[2].median_ms);
  }
  ch01::PieceSet set(1024, 4096, 8);
  // The slowest correct send: one thread packs everything, then one copy, then the unpack.
  const auto pack_then_copy = [&](cudaStream_t s) {
    for (std::size_t i = 0; i < set.batch.count; ++i)
      std::memcpy(set.staging.host + i * set.batch.piece_bytes, set.batch.host_base + set.batch.host_offsets[i],
                  set.batch.piece_bytes);
    CUDA_CHECK(cudaMemcpyAsync(set.staging.device, set.staging.host, set.batch.count * set.batch.piece_bytes,
                               cudaMemcpyHostToDevice, s));
    ch01::launch_unpack(set.staging.device, set.batch, s);
  };
  for (int run = 0; run < 5; ++run) {
    const auto st =
        cml::time_interleaved({[&](cudaStream_t s) { ch01::send_one_by_one(set.batch, s, true); },
                               [&](cudaStream_t s) { ch01::send_batched(set.batch, set.staging, s); }, pack_then_copy,
                               [&](cudaStream_t s) { ch01::send_one_by_one(set.batch, s, false); }},
                              stream, {2, 15}, cml::Clock::Host);
    std::printf(
        "batch-bar run %d one-by-one/send_batched %.2f  one-by-one/pack-then-copy %.2f  "
        "one-by-one/async-per-piece (the mistake) %.2f\n",
        run, st[0].median_ms / st[1].median_ms, st[0].median_ms / st[2].median_ms, st[0].median_ms / st[3].median_ms);
  }
  std::fflush(stdout);
  SUCCEED();
}

// ---- Your own work ----------------------------------------------------------------------

CML_INTEGRITY_CASE(01, "01_transfers")
