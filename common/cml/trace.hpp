// An in-process CUPTI activity recorder: what really ran on the GPU while it was on —
// each copy (direction, source and destination memory kind, bytes, stream, start/end), each
// kernel (name, stream, start/end), each memset, and unified-memory transfers and faults.
// Tests use it as evidence of mechanism (copies came from pinned memory, one copy instead
// of N, no copy at all, intervals overlapped). A trace that failed (CUPTI refuses to run
// under compute-sanitizer and ncu) or came back empty is never evidence that something did
// not happen: check `ok` and that the records you expect are there.
#pragma once

#include "intervals.hpp"

#include <cuda_runtime_api.h>

#include <array>
#include <cstdint>
#include <string>
#include <vector>

namespace cml::trace {

enum class MemoryKind { Unknown, Pageable, Pinned, Device, Array, Managed, DeviceStatic, ManagedStatic };
enum class CopyKind { Unknown, HtoD, DtoH, HtoA, AtoH, AtoA, AtoD, DtoA, DtoD, HtoH, PtoP };

const char* to_string(MemoryKind k);
const char* to_string(CopyKind k);

struct CopyRecord {
  CopyKind kind = CopyKind::Unknown;
  MemoryKind src = MemoryKind::Unknown;
  MemoryKind dst = MemoryKind::Unknown;
  std::uint64_t bytes = 0;
  std::uint32_t device_id = 0;  // the device whose stream ran the copy (CUDA's device index)
  // A peer copy's two ends (CopyKind::PtoP, CUPTI's MEMCPY2 records); device_id for others.
  std::uint32_t src_device = 0, dst_device = 0;
  std::uint32_t stream_id = 0;
  std::uint32_t correlation_id = 0;
  Interval when;
};

struct KernelRecord {
  std::string name;             // demangled where CUPTI could, else as CUPTI gave it
  std::uint32_t device_id = 0;  // the device it ran on (CUDA's device index)
  std::uint32_t stream_id = 0;
  std::uint32_t correlation_id = 0;
  std::array<std::int32_t, 3> grid{};   // the launch's grid (x, y, z)
  std::array<std::int32_t, 3> block{};  // and block
  std::int32_t shared_bytes = 0;        // shared memory per block, static and dynamic
  Interval when;
};

struct MemsetRecord {
  std::uint64_t bytes = 0;
  MemoryKind memory = MemoryKind::Unknown;
  std::uint32_t stream_id = 0;
  Interval when;
};

// Unified memory counters (CUPTI_ACTIVITY_KIND_UNIFIED_MEMORY_COUNTER).
enum class UnifiedKind {
  Unknown,
  BytesHtoD,
  BytesDtoH,
  CpuPageFault,
  GpuPageFault,
  Thrashing,
  Throttling,
  RemoteMap,
  BytesDtoD
};
const char* to_string(UnifiedKind k);
struct UnifiedRecord {
  UnifiedKind kind = UnifiedKind::Unknown;
  std::uint64_t value = 0;  // bytes for transfers, fault count for faults
  std::uint64_t address = 0;
  std::uint32_t migration_cause = 0;  // CUpti_ActivityUnifiedMemoryMigrationCause, for transfers
  Interval when;
};

// A host call that kept its thread waiting (cml::api::long_calls): not an activity CUPTI
// records, but drawn on the same timeline.
struct HostRecord {
  std::string name;  // "cudaStreamSynchronize"
  Interval when;
};

struct Trace {
  bool ok = false;            // recording worked from start to stop
  std::string error;          // why not, when !ok (e.g. CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED)
  std::uint64_t dropped = 0;  // records CUPTI had to drop (a non-zero count makes ok false)
  std::vector<CopyRecord> copies;
  std::vector<KernelRecord> kernels;
  std::vector<MemsetRecord> memsets;
  std::vector<UnifiedRecord> unified;
  std::vector<HostRecord> host;  // filled by the caller, from cml::api::long_calls, where it recorded calls

  std::vector<CopyRecord> copies_of(CopyKind kind) const;
  // Kernels whose name contains `fragment` (e.g. the learner's kernel's name).
  std::vector<KernelRecord> kernels_named(const std::string& fragment) const;
  std::vector<Interval> copy_intervals(CopyKind kind) const;
  std::vector<Interval> kernel_intervals() const;
  // Everything on the timeline, for a CSV the bench plots.
  std::string to_csv() const;
};

struct Options {
  bool copies = true;
  bool kernels = true;  // recorded as CONCURRENT_KERNEL: plain KERNEL serialises all kernels
  bool memsets = true;
  bool unified_memory = false;  // needs CUDA initialised first (select_device does it)
};

// Records from construction to stop(). One Recorder at a time per process (CUPTI's activity
// buffers are global). Construction never throws for CUPTI's sake: a CUPTI failure is
// kept, and stop() returns a Trace with ok == false and the reason. CML_TRACE=off in the
// environment turns recording off (sanitizer runs): the Trace says so in `error`.
class Recorder {
 public:
  explicit Recorder(Options opts = {});
  Recorder(const Recorder&) = delete;
  Recorder& operator=(const Recorder&) = delete;
  ~Recorder();
  // Synchronises the device, flushes CUPTI and returns what was recorded.
  Trace stop();
  // Synchronises, flushes and throws away everything recorded so far; recording goes on.
  // The first kernel launched after tracing starts can be held back by milliseconds while
  // CUPTI sets itself up (seen on an H200: 0.8 to 4 ms), which would distort a timeline and
  // its overlap fractions: run the work once, discard(), run it again, stop().
  void discard();

 private:
  bool active_ = false;
  std::string error_;
  Options opts_;
};

// CUPTI's clock, the one records are stamped with (ns): to cut one recording into windows.
std::uint64_t timestamp_ns();

// True when CML_TRACE=off (or 0): tests that need a trace skip instead of failing.
bool disabled_by_environment();

// CUPTI's id for a stream, to match against records' stream_id. The legacy default
// stream is `0` (pass nullptr / cudaStreamLegacy). Throws CheckFailed if CUPTI can't say.
std::uint32_t stream_id_of(cudaStream_t stream);

}  // namespace cml::trace
