// The CUPTI activity recorder: see cml/trace.hpp.
//
// How it works. CUPTI's Activity API writes one record per GPU operation into buffers that
// we hand it (buffer_requested) and hands them back when full or flushed (buffer_completed),
// possibly on a thread of its own. Those callbacks are process-wide, so the parsed records
// go to one global store behind a mutex, and only one Recorder may use it at a time.
// stop() synchronises the device (so every record is complete), forces CUPTI to hand back
// every buffer, and moves the store into the Trace it returns.
//
// Failure policy. CUPTI fails for reasons outside the program's control: compute-sanitizer
// and ncu hold CUPTI themselves (CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED), a device
// may not support unified-memory counters. None of that may abort a test run, so CUPTI
// errors are kept as text (cupti_failure below) and come back as Trace::error with
// ok == false; a test that needs the trace then skips or fails on its own terms. CUDA
// runtime errors are different: they mean the program itself is broken, and CUDA_CHECK
// throws as everywhere else in the course.
#include "cml/trace.hpp"

#include "cml/errors.hpp"

#include <cupti.h>
#include <cxxabi.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cctype>
#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <limits>
#include <mutex>
#include <sstream>
#include <stdexcept>
#include <thread>
#include <utility>

namespace cml::trace {

namespace {

// --- Record layouts -------------------------------------------------------------------
// CUPTI writes the newest version of each record struct that its own version knows. We
// read through the newest struct of the headers we compile against; on CUDA 12 headers
// (which lack the CUDA 13 versions) through the previous ones. The static_asserts prove,
// on CUDA 13 headers, that every field read below sits at the same offset in both, so a
// CUDA 12 build reading a newer CUPTI's records reads the right bytes.
#if CUPTI_API_VERSION >= 130000
using MemcpyRec = CUpti_ActivityMemcpy6;
using KernelRec = CUpti_ActivityKernel10;
using MemsetRec = CUpti_ActivityMemset4;
using UnifiedRec = CUpti_ActivityUnifiedMemoryCounter3;

#define CML_SAME_OFFSET(a, b, field) \
  static_assert(offsetof(a, field) == offsetof(b, field), #a " and " #b " differ at " #field)
CML_SAME_OFFSET(CUpti_ActivityMemcpy6, CUpti_ActivityMemcpy5, copyKind);
CML_SAME_OFFSET(CUpti_ActivityMemcpy6, CUpti_ActivityMemcpy5, srcKind);
CML_SAME_OFFSET(CUpti_ActivityMemcpy6, CUpti_ActivityMemcpy5, dstKind);
CML_SAME_OFFSET(CUpti_ActivityMemcpy6, CUpti_ActivityMemcpy5, bytes);
CML_SAME_OFFSET(CUpti_ActivityMemcpy6, CUpti_ActivityMemcpy5, start);
CML_SAME_OFFSET(CUpti_ActivityMemcpy6, CUpti_ActivityMemcpy5, end);
CML_SAME_OFFSET(CUpti_ActivityMemcpy6, CUpti_ActivityMemcpy5, streamId);
CML_SAME_OFFSET(CUpti_ActivityMemcpy6, CUpti_ActivityMemcpy5, correlationId);
CML_SAME_OFFSET(CUpti_ActivityKernel10, CUpti_ActivityKernel9, start);
CML_SAME_OFFSET(CUpti_ActivityKernel10, CUpti_ActivityKernel9, end);
CML_SAME_OFFSET(CUpti_ActivityKernel10, CUpti_ActivityKernel9, streamId);
CML_SAME_OFFSET(CUpti_ActivityKernel10, CUpti_ActivityKernel9, correlationId);
CML_SAME_OFFSET(CUpti_ActivityKernel10, CUpti_ActivityKernel9, name);
CML_SAME_OFFSET(CUpti_ActivityUnifiedMemoryCounter3, CUpti_ActivityUnifiedMemoryCounter2, counterKind);
CML_SAME_OFFSET(CUpti_ActivityUnifiedMemoryCounter3, CUpti_ActivityUnifiedMemoryCounter2, value);
CML_SAME_OFFSET(CUpti_ActivityUnifiedMemoryCounter3, CUpti_ActivityUnifiedMemoryCounter2, start);
CML_SAME_OFFSET(CUpti_ActivityUnifiedMemoryCounter3, CUpti_ActivityUnifiedMemoryCounter2, end);
CML_SAME_OFFSET(CUpti_ActivityUnifiedMemoryCounter3, CUpti_ActivityUnifiedMemoryCounter2, address);
CML_SAME_OFFSET(CUpti_ActivityUnifiedMemoryCounter3, CUpti_ActivityUnifiedMemoryCounter2, flags);
#undef CML_SAME_OFFSET
#else
using MemcpyRec = CUpti_ActivityMemcpy5;
using KernelRec = CUpti_ActivityKernel9;
using MemsetRec = CUpti_ActivityMemset4;
using UnifiedRec = CUpti_ActivityUnifiedMemoryCounter2;
#endif

// --- CUPTI errors as values -----------------------------------------------------------
// The CUPTI counterpart of CUDA_CHECK, except that it never throws (see the failure policy
// above): "" on success, else "<call>: CUPTI_ERROR_...".
std::string cupti_failure(CUptiResult result, const char* call) {
  if (result == CUPTI_SUCCESS) return {};
  const char* name = nullptr;
  if (cuptiGetResultString(result, &name) != CUPTI_SUCCESS || name == nullptr)
    name = "unknown CUPTI error";
  return std::string(call) + ": " + name + " (" + std::to_string(static_cast<int>(result)) + ")";
}
#define CUPTI_CALL(expr) cupti_failure((expr), #expr)

// Joins problems into one message; a trace can fail for more than one reason at once.
void add_problem(std::string& to, const std::string& what) {
  if (what.empty()) return;
  if (!to.empty()) to += "; ";
  to += what;
}

// --- Mapping CUPTI's enums onto ours --------------------------------------------------
MemoryKind memory_kind(unsigned k) {
  switch (k) {
    case CUPTI_ACTIVITY_MEMORY_KIND_PAGEABLE: return MemoryKind::Pageable;
    case CUPTI_ACTIVITY_MEMORY_KIND_PINNED: return MemoryKind::Pinned;
    case CUPTI_ACTIVITY_MEMORY_KIND_DEVICE: return MemoryKind::Device;
    case CUPTI_ACTIVITY_MEMORY_KIND_ARRAY: return MemoryKind::Array;
    case CUPTI_ACTIVITY_MEMORY_KIND_MANAGED: return MemoryKind::Managed;
    case CUPTI_ACTIVITY_MEMORY_KIND_DEVICE_STATIC: return MemoryKind::DeviceStatic;
    case CUPTI_ACTIVITY_MEMORY_KIND_MANAGED_STATIC: return MemoryKind::ManagedStatic;
    default: return MemoryKind::Unknown;
  }
}

CopyKind copy_kind(unsigned k) {
  switch (k) {
    case CUPTI_ACTIVITY_MEMCPY_KIND_HTOD: return CopyKind::HtoD;
    case CUPTI_ACTIVITY_MEMCPY_KIND_DTOH: return CopyKind::DtoH;
    case CUPTI_ACTIVITY_MEMCPY_KIND_HTOA: return CopyKind::HtoA;
    case CUPTI_ACTIVITY_MEMCPY_KIND_ATOH: return CopyKind::AtoH;
    case CUPTI_ACTIVITY_MEMCPY_KIND_ATOA: return CopyKind::AtoA;
    case CUPTI_ACTIVITY_MEMCPY_KIND_ATOD: return CopyKind::AtoD;
    case CUPTI_ACTIVITY_MEMCPY_KIND_DTOA: return CopyKind::DtoA;
    case CUPTI_ACTIVITY_MEMCPY_KIND_DTOD: return CopyKind::DtoD;
    case CUPTI_ACTIVITY_MEMCPY_KIND_HTOH: return CopyKind::HtoH;
    case CUPTI_ACTIVITY_MEMCPY_KIND_PTOP: return CopyKind::PtoP;
    default: return CopyKind::Unknown;
  }
}

UnifiedKind unified_kind(unsigned k) {
  switch (k) {
    case CUPTI_ACTIVITY_UNIFIED_MEMORY_COUNTER_KIND_BYTES_TRANSFER_HTOD: return UnifiedKind::BytesHtoD;
    case CUPTI_ACTIVITY_UNIFIED_MEMORY_COUNTER_KIND_BYTES_TRANSFER_DTOH: return UnifiedKind::BytesDtoH;
    case CUPTI_ACTIVITY_UNIFIED_MEMORY_COUNTER_KIND_CPU_PAGE_FAULT_COUNT: return UnifiedKind::CpuPageFault;
    case CUPTI_ACTIVITY_UNIFIED_MEMORY_COUNTER_KIND_GPU_PAGE_FAULT: return UnifiedKind::GpuPageFault;
    case CUPTI_ACTIVITY_UNIFIED_MEMORY_COUNTER_KIND_THRASHING: return UnifiedKind::Thrashing;
    case CUPTI_ACTIVITY_UNIFIED_MEMORY_COUNTER_KIND_THROTTLING: return UnifiedKind::Throttling;
    case CUPTI_ACTIVITY_UNIFIED_MEMORY_COUNTER_KIND_REMOTE_MAP: return UnifiedKind::RemoteMap;
    case CUPTI_ACTIVITY_UNIFIED_MEMORY_COUNTER_KIND_BYTES_TRANSFER_DTOD: return UnifiedKind::BytesDtoD;
    default: return UnifiedKind::Unknown;
  }
}

// Kernel names arrive mangled ("_Z5scalePfif"); the tests and the CSV want what the
// learner wrote ("scale(float*, int, float)"), so kernels_named("scale") finds it.
std::string demangle(const char* name) {
  if (name == nullptr) return "<unnamed kernel>";
  if (std::strncmp(name, "_Z", 2) != 0) return name;
  int status = 0;
  char* plain = abi::__cxa_demangle(name, nullptr, nullptr, &status);
  std::string out = (status == 0 && plain != nullptr) ? std::string(plain) : std::string(name);
  std::free(plain);
  return out;
}

// --- Parsing one record ---------------------------------------------------------------
// The Trace being filled is only a container here: ok/error are decided in stop().
void parse(const CUpti_Activity* rec, Trace& into) {
  switch (rec->kind) {
    case CUPTI_ACTIVITY_KIND_MEMCPY: {
      const auto* r = reinterpret_cast<const MemcpyRec*>(rec);
      CopyRecord c;
      c.kind = copy_kind(r->copyKind);
      c.src = memory_kind(r->srcKind);
      c.dst = memory_kind(r->dstKind);
      c.bytes = r->bytes;
      c.stream_id = r->streamId;
      c.correlation_id = r->correlationId;
      c.when = {r->start, r->end};
      into.copies.push_back(c);
      break;
    }
    // KIND_KERNEL shares the record layout; it is never enabled here (it serialises all
    // kernels), but a record of it is still a kernel if another part of the process did.
    case CUPTI_ACTIVITY_KIND_KERNEL:
    case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL: {
      const auto* r = reinterpret_cast<const KernelRec*>(rec);
      KernelRecord k;
      k.name = demangle(r->name);  // copied now: the name's storage belongs to CUPTI
      k.stream_id = r->streamId;
      k.correlation_id = r->correlationId;
      k.when = {r->start, r->end};
      into.kernels.push_back(std::move(k));
      break;
    }
    case CUPTI_ACTIVITY_KIND_MEMSET: {
      const auto* r = reinterpret_cast<const MemsetRec*>(rec);
      MemsetRecord m;
      m.bytes = r->bytes;
      m.memory = memory_kind(r->memoryKind);
      m.stream_id = r->streamId;
      m.when = {r->start, r->end};
      into.memsets.push_back(m);
      break;
    }
    case CUPTI_ACTIVITY_KIND_UNIFIED_MEMORY_COUNTER: {
      const auto* r = reinterpret_cast<const UnifiedRec*>(rec);
      UnifiedRecord u;
      u.kind = unified_kind(r->counterKind);
      u.value = r->value;
      u.address = r->address;
      u.when = {r->start, r->end};
      switch (r->counterKind) {
        case CUPTI_ACTIVITY_UNIFIED_MEMORY_COUNTER_KIND_BYTES_TRANSFER_HTOD:
        case CUPTI_ACTIVITY_UNIFIED_MEMORY_COUNTER_KIND_BYTES_TRANSFER_DTOH:
          // The header documents `flags` as CUpti_ActivityUnifiedMemoryMigrationCause for
          // the byte-transfer counters only; for other kinds it means something else.
          u.migration_cause = r->flags;
          break;
        case CUPTI_ACTIVITY_UNIFIED_MEMORY_COUNTER_KIND_CPU_PAGE_FAULT_COUNT:
          // CUPTI puts the faulting instruction's address in `value` here and one record
          // stands for one fault; our `value` is a fault count, so it is 1. The header also
          // says to ignore `end`, so the fault is an instant.
          u.value = 1;
          u.when.end = u.when.start;
          break;
        case CUPTI_ACTIVITY_UNIFIED_MEMORY_COUNTER_KIND_THRASHING:
        case CUPTI_ACTIVITY_UNIFIED_MEMORY_COUNTER_KIND_REMOTE_MAP:
          u.when.end = u.when.start;  // `end` is documented as meaningless for these
          break;
        default:
          break;
      }
      into.unified.push_back(u);
      break;
    }
    default:
      break;  // kinds we never enable (another CUPTI client in the process may have)
  }
}

// --- The process-wide store the buffer callbacks fill ---------------------------------
struct Store {
  std::mutex mu;
  Trace records;              // only the record vectors are used
  std::uint64_t dropped = 0;  // summed from cuptiActivityGetNumDroppedRecords
  std::string problem;        // a buffer CUPTI handed back that could not be read
};

// Deliberately leaked: CUPTI may deliver a last buffer from its own atexit flush, after
// function-local statics have been destroyed; a heap object that is never freed is still
// there then.
Store& store() {
  static Store* s = new Store;
  return *s;
}

// CUPTI's records are 8-byte aligned (ACTIVITY_RECORD_ALIGNMENT) and it wants the buffer
// so too. 1 MiB holds thousands of records: a chapter's run fills few buffers, and one
// that fills many is still correct, only slower.
//
// CUPTI asks for a buffer on the thread whose API call produced the first record that did
// not fit, so the cost of a fresh buffer lands inside the traced work. On the H200 machine
// (a VM) faulting in a fresh 8 MiB buffer held back the first kernel of a traced pipeline
// by 0.7 to 4 ms. So buffers are faulted in before recording starts (Recorder's
// constructor fills a pool) and reused, never returned to the OS.
constexpr std::size_t kBufferBytes = std::size_t{1} << 20;
constexpr std::size_t kBufferAlign = ACTIVITY_RECORD_ALIGNMENT;
constexpr std::size_t kPooledBuffers = 8;

struct BufferPool {
  std::mutex mu;
  std::vector<uint8_t*> free;
};
BufferPool& buffer_pool() {
  static BufferPool* p = new BufferPool;  // leaked for the same reason as the store
  return *p;
}

uint8_t* new_faulted_buffer() {
  auto* b = static_cast<uint8_t*>(std::aligned_alloc(kBufferAlign, kBufferBytes));
  if (b != nullptr) std::memset(b, 0, kBufferBytes);  // touch every page now, not while tracing
  return b;
}

void fill_buffer_pool() {
  BufferPool& p = buffer_pool();
  std::lock_guard<std::mutex> lock(p.mu);
  while (p.free.size() < kPooledBuffers) {
    uint8_t* b = new_faulted_buffer();
    if (b == nullptr) break;
    p.free.push_back(b);
  }
}

void CUPTIAPI buffer_requested(uint8_t** buffer, size_t* size, size_t* max_records) {
  uint8_t* b = nullptr;
  {
    BufferPool& p = buffer_pool();
    std::lock_guard<std::mutex> lock(p.mu);
    if (!p.free.empty()) {
      b = p.free.back();
      p.free.pop_back();
    }
  }
  // On allocation failure CUPTI gets no buffer and drops records; the dropped count then
  // makes the trace fail, which is the honest outcome.
  if (b == nullptr) b = new_faulted_buffer();
  *buffer = b;
  *size = b != nullptr ? kBufferBytes : 0;
  *max_records = 0;  // as many as fit
}

void give_back_buffer(uint8_t* b) {
  if (b == nullptr) return;
  BufferPool& p = buffer_pool();
  std::lock_guard<std::mutex> lock(p.mu);
  p.free.push_back(b);
}

void CUPTIAPI buffer_completed(CUcontext, uint32_t, uint8_t* buffer, size_t, size_t valid) {
  // Parse outside the lock (demangling is slow), then append under it.
  Trace parsed;
  std::string problem;
  if (buffer != nullptr && valid > 0) {
    CUpti_Activity* rec = nullptr;
    for (;;) {
      const CUptiResult r = cuptiActivityGetNextRecord(buffer, valid, &rec);
      if (r == CUPTI_SUCCESS) {
        parse(rec, parsed);
        continue;
      }
      // MAX_LIMIT_REACHED is the normal end of the buffer. INVALID_KIND marks an incomplete
      // record, which CUPTI's own samples treat as the end too; stop() synchronises before
      // flushing, so none of the kinds we enable should be incomplete then.
      if (r != CUPTI_ERROR_MAX_LIMIT_REACHED && r != CUPTI_ERROR_INVALID_KIND)
        problem = cupti_failure(r, "cuptiActivityGetNextRecord");
      break;
    }
  }
  give_back_buffer(buffer);
  size_t dropped = 0;
  const bool counted = cuptiActivityGetNumDroppedRecords(nullptr, 0, &dropped) == CUPTI_SUCCESS;

  Store& s = store();
  std::lock_guard<std::mutex> lock(s.mu);
  auto append = [](auto& to, auto& from) {
    to.insert(to.end(), std::make_move_iterator(from.begin()), std::make_move_iterator(from.end()));
  };
  append(s.records.copies, parsed.copies);
  append(s.records.kernels, parsed.kernels);
  append(s.records.memsets, parsed.memsets);
  append(s.records.unified, parsed.unified);
  if (counted) s.dropped += dropped;
  add_problem(s.problem, problem);
}

// --- Recording session state ----------------------------------------------------------
// One Recorder at a time (the store and CUPTI's activity switches are process-wide). The
// flag is taken in the constructor and given back when recording ends, by stop() or the
// destructor; the rest of this state is only touched by the Recorder holding the flag.
std::atomic<bool> g_recording{false};
bool g_callbacks_registered = false;
std::vector<CUpti_ActivityKind> g_enabled;  // what stop() must switch off again

// cuptiActivityRegisterCallbacks once per process: CUPTI keeps one pair of callbacks, and
// they serve every Recorder. A failure is not remembered, so a later Recorder tries again.
std::string register_callbacks() {
  if (g_callbacks_registered) return {};
  std::string err = CUPTI_CALL(cuptiActivityRegisterCallbacks(buffer_requested, buffer_completed));
  g_callbacks_registered = err.empty();
  return err;
}

const char* kind_name(CUpti_ActivityKind k) {
  switch (k) {
    case CUPTI_ACTIVITY_KIND_MEMCPY: return "MEMCPY";
    case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL: return "CONCURRENT_KERNEL";
    case CUPTI_ACTIVITY_KIND_MEMSET: return "MEMSET";
    case CUPTI_ACTIVITY_KIND_UNIFIED_MEMORY_COUNTER: return "UNIFIED_MEMORY_COUNTER";
    default: return "other";
  }
}

std::string enable(CUpti_ActivityKind kind) {
  const CUptiResult r = cuptiActivityEnable(kind);
  if (r != CUPTI_SUCCESS)
    return cupti_failure(r, (std::string("cuptiActivityEnable(") + kind_name(kind) + ")").c_str());
  g_enabled.push_back(kind);
  return {};
}

void disable_all() {
  // Errors are ignored: this runs on the way out (also from the destructor), and a kind
  // that will not switch off leaves nothing we could do better.
  for (CUpti_ActivityKind k : g_enabled) (void)cuptiActivityDisable(k);
  g_enabled.clear();
}

// Unified-memory counters: each must be configured before the activity kind is enabled,
// and a device may refuse some (older GPUs, some platforms). Asking for all at once fails
// as a whole if one is refused, so on refusal each is configured alone and the accepted
// ones are kept. Failing to get the four the course relies on is an error (a trace without
// them cannot show that a fault did not happen); the others are extras.
std::string enable_unified_memory() {
  struct Wanted {
    CUpti_ActivityUnifiedMemoryCounterKind kind;
    const char* name;
    bool core;
  };
  const Wanted wanted[] = {
      {CUPTI_ACTIVITY_UNIFIED_MEMORY_COUNTER_KIND_BYTES_TRANSFER_HTOD, "BYTES_TRANSFER_HTOD", true},
      {CUPTI_ACTIVITY_UNIFIED_MEMORY_COUNTER_KIND_BYTES_TRANSFER_DTOH, "BYTES_TRANSFER_DTOH", true},
      {CUPTI_ACTIVITY_UNIFIED_MEMORY_COUNTER_KIND_CPU_PAGE_FAULT_COUNT, "CPU_PAGE_FAULT_COUNT", true},
      {CUPTI_ACTIVITY_UNIFIED_MEMORY_COUNTER_KIND_GPU_PAGE_FAULT, "GPU_PAGE_FAULT", true},
      {CUPTI_ACTIVITY_UNIFIED_MEMORY_COUNTER_KIND_THRASHING, "THRASHING", false},
      {CUPTI_ACTIVITY_UNIFIED_MEMORY_COUNTER_KIND_THROTTLING, "THROTTLING", false},
      {CUPTI_ACTIVITY_UNIFIED_MEMORY_COUNTER_KIND_REMOTE_MAP, "REMOTE_MAP", false},
      {CUPTI_ACTIVITY_UNIFIED_MEMORY_COUNTER_KIND_BYTES_TRANSFER_DTOD, "BYTES_TRANSFER_DTOD", false},
  };
  int device = 0;
  CUDA_CHECK(cudaGetDevice(&device));
  auto config_of = [device](CUpti_ActivityUnifiedMemoryCounterKind kind) {
    CUpti_ActivityUnifiedMemoryCounterConfig c{};
    // Scope and device are deprecated since CUDA 7 (counters are per process), but CUPTI
    // still validates them.
    c.scope = CUPTI_ACTIVITY_UNIFIED_MEMORY_COUNTER_SCOPE_PROCESS_SINGLE_DEVICE;
    c.kind = kind;
    c.deviceId = static_cast<uint32_t>(device);
    c.enable = 1;
    return c;
  };

  std::vector<CUpti_ActivityUnifiedMemoryCounterConfig> all;
  for (const Wanted& w : wanted) all.push_back(config_of(w.kind));
  std::string err;
  if (cuptiActivityConfigureUnifiedMemoryCounter(all.data(), static_cast<uint32_t>(all.size())) !=
      CUPTI_SUCCESS) {
    for (const Wanted& w : wanted) {
      CUpti_ActivityUnifiedMemoryCounterConfig one = config_of(w.kind);
      const CUptiResult r = cuptiActivityConfigureUnifiedMemoryCounter(&one, 1);
      if (r != CUPTI_SUCCESS && w.core)
        add_problem(err, cupti_failure(r, (std::string("unified-memory counter ") + w.name).c_str()));
    }
  }
  add_problem(err, enable(CUPTI_ACTIVITY_KIND_UNIFIED_MEMORY_COUNTER));
  return err;
}

// Unified-memory records come from the driver's migration engine and may be delivered
// after the work that caused them, even after a synchronise and a forced flush: flush
// again until their count has not grown for three flushes 10 ms apart (at most 1 s).
void settle_unified_records() {
  std::size_t last = static_cast<std::size_t>(-1);
  int still = 0;
  for (int i = 0; i < 100 && still < 3; ++i) {
    cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
    std::size_t now = 0;
    {
      Store& s = store();
      std::lock_guard<std::mutex> lock(s.mu);
      now = s.records.unified.size();
    }
    still = (now == last) ? still + 1 : 0;
    last = now;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
}

// Seen on an H200 (CUDA 13): the first recording of a process that asked for
// unified-memory counters came back without host-to-device transfer records, later ones
// with them. So the first time, a small managed buffer makes one round trip and whatever
// it recorded is thrown away before the caller's work starts.
void prime_unified_memory_once() {
  static bool primed = false;
  if (primed) return;
  primed = true;
  int device = 0, managed = 0;
  CUDA_CHECK(cudaGetDevice(&device));
  CUDA_CHECK(cudaDeviceGetAttribute(&managed, cudaDevAttrManagedMemory, device));
  if (!managed) return;
  void* p = nullptr;
  const std::size_t bytes = std::size_t{2} << 20;
  CUDA_CHECK(cudaMallocManaged(&p, bytes));
  std::memset(p, 1, bytes);
  cudaMemLocation gpu{};
  gpu.type = cudaMemLocationTypeDevice;
  gpu.id = device;
  cudaMemLocation host{};
  host.type = cudaMemLocationTypeHost;
  CUDA_CHECK(cudaMemPrefetchAsync(p, bytes, gpu, 0, nullptr));
  CUDA_CHECK(cudaMemPrefetchAsync(p, bytes, host, 0, nullptr));
  CUDA_CHECK(cudaDeviceSynchronize());
  CUDA_CHECK(cudaFree(p));
  settle_unified_records();
  Store& s = store();
  std::lock_guard<std::mutex> lock(s.mu);
  s.records = Trace{};
}

void release_recording_slot() { g_recording.store(false); }

// Orders a record list by start time: buffers arrive in no promised order, and tests
// reason about "the first copy" or "the copy before the kernel".
template <typename Record>
void sort_by_start(std::vector<Record>& xs) {
  std::stable_sort(xs.begin(), xs.end(),
                   [](const Record& a, const Record& b) { return a.when.start < b.when.start; });
}

// CUPTI writes 0 for both timestamps when it could not time an operation. Such a record
// still proves the operation happened, but it has no place on a timeline.
bool timed(const Interval& i) { return i.start != 0 || i.end != 0; }

// A CSV field, quoted when needed: demangled names hold commas ("f(float*, int)").
std::string csv_field(const std::string& s) {
  if (s.find_first_of(",\"\n\r") == std::string::npos) return s;
  std::string q = "\"";
  for (char c : s) {
    if (c == '"') q += '"';
    q += c;
  }
  return q + "\"";
}

}  // namespace

// --- Names ----------------------------------------------------------------------------

const char* to_string(MemoryKind k) {
  switch (k) {
    case MemoryKind::Pageable: return "pageable";
    case MemoryKind::Pinned: return "pinned";
    case MemoryKind::Device: return "device";
    case MemoryKind::Array: return "array";
    case MemoryKind::Managed: return "managed";
    case MemoryKind::DeviceStatic: return "device_static";
    case MemoryKind::ManagedStatic: return "managed_static";
    case MemoryKind::Unknown: break;
  }
  return "unknown";
}

const char* to_string(CopyKind k) {
  switch (k) {
    case CopyKind::HtoD: return "HtoD";
    case CopyKind::DtoH: return "DtoH";
    case CopyKind::HtoA: return "HtoA";
    case CopyKind::AtoH: return "AtoH";
    case CopyKind::AtoA: return "AtoA";
    case CopyKind::AtoD: return "AtoD";
    case CopyKind::DtoA: return "DtoA";
    case CopyKind::DtoD: return "DtoD";
    case CopyKind::HtoH: return "HtoH";
    case CopyKind::PtoP: return "PtoP";
    case CopyKind::Unknown: break;
  }
  return "unknown";
}

const char* to_string(UnifiedKind k) {
  switch (k) {
    case UnifiedKind::BytesHtoD: return "bytes_HtoD";
    case UnifiedKind::BytesDtoH: return "bytes_DtoH";
    case UnifiedKind::CpuPageFault: return "cpu_page_fault";
    case UnifiedKind::GpuPageFault: return "gpu_page_fault";
    case UnifiedKind::Thrashing: return "thrashing";
    case UnifiedKind::Throttling: return "throttling";
    case UnifiedKind::RemoteMap: return "remote_map";
    case UnifiedKind::BytesDtoD: return "bytes_DtoD";
    case UnifiedKind::Unknown: break;
  }
  return "unknown";
}

// --- Trace queries --------------------------------------------------------------------

std::vector<CopyRecord> Trace::copies_of(CopyKind kind) const {
  std::vector<CopyRecord> out;
  for (const CopyRecord& c : copies)
    if (c.kind == kind) out.push_back(c);
  return out;
}

std::vector<KernelRecord> Trace::kernels_named(const std::string& fragment) const {
  std::vector<KernelRecord> out;
  for (const KernelRecord& k : kernels)
    if (k.name.find(fragment) != std::string::npos) out.push_back(k);
  return out;
}

std::vector<Interval> Trace::copy_intervals(CopyKind kind) const {
  std::vector<Interval> out;
  for (const CopyRecord& c : copies)
    if (c.kind == kind && timed(c.when)) out.push_back(c.when);
  return out;
}

std::vector<Interval> Trace::kernel_intervals() const {
  std::vector<Interval> out;
  for (const KernelRecord& k : kernels)
    if (timed(k.when)) out.push_back(k.when);
  return out;
}

std::string Trace::to_csv() const {
  // Times are relative to the earliest timed record, so the plot starts at 0 and the
  // numbers stay readable; untimed records get empty time fields rather than a fake 0.
  std::uint64_t origin = std::numeric_limits<std::uint64_t>::max();
  auto consider = [&origin](const Interval& i) {
    if (timed(i)) origin = std::min(origin, i.start);
  };
  for (const auto& c : copies) consider(c.when);
  for (const auto& k : kernels) consider(k.when);
  for (const auto& m : memsets) consider(m.when);
  for (const auto& u : unified) consider(u.when);

  struct Row {
    std::uint64_t start;
    std::string text;
  };
  std::vector<Row> rows;
  auto add = [&rows, origin](const std::string& type, const std::string& name,
                             const std::string& kind, const std::string& src,
                             const std::string& dst, const std::string& bytes,
                             const std::string& stream, const Interval& when) {
    std::ostringstream line;
    line << type << ',' << csv_field(name) << ',' << kind << ',' << src << ',' << dst << ','
         << bytes << ',' << stream << ',';
    if (timed(when)) {
      // A record can start before the origin only if it is untimed; guard anyway.
      const auto rel = [origin](std::uint64_t t) { return t >= origin ? t - origin : 0; };
      line << rel(when.start) << ',' << rel(when.end);
    } else {
      line << ',';
    }
    rows.push_back({timed(when) ? when.start : 0, line.str()});
  };

  for (const auto& c : copies)
    add("copy", "", to_string(c.kind), to_string(c.src), to_string(c.dst),
        std::to_string(c.bytes), std::to_string(c.stream_id), c.when);
  for (const auto& k : kernels)
    add("kernel", k.name, "", "", "", "", std::to_string(k.stream_id), k.when);
  for (const auto& m : memsets)
    add("memset", "", "", "", to_string(m.memory), std::to_string(m.bytes),
        std::to_string(m.stream_id), m.when);
  for (const auto& u : unified) {
    // `value` is bytes only for the transfer counters (a fault count otherwise), and CUPTI
    // documents the unified records' stream id as invalid: both columns stay empty there.
    const bool is_bytes = u.kind == UnifiedKind::BytesHtoD || u.kind == UnifiedKind::BytesDtoH ||
                          u.kind == UnifiedKind::BytesDtoD;
    add("unified", "", to_string(u.kind), "", "", is_bytes ? std::to_string(u.value) : "", "",
        u.when);
  }
  std::stable_sort(rows.begin(), rows.end(),
                   [](const Row& a, const Row& b) { return a.start < b.start; });

  std::string out = "type,name,kind,src,dst,bytes,stream,start_ns,end_ns\n";
  for (const Row& r : rows) out += r.text + "\n";
  return out;
}

// --- Recorder -------------------------------------------------------------------------

bool disabled_by_environment() {
  const char* v = std::getenv("CML_TRACE");
  if (v == nullptr) return false;
  std::string s(v);
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s == "off" || s == "0";
}

Recorder::Recorder(Options opts) : opts_(opts) {
  bool expected = false;
  if (!g_recording.compare_exchange_strong(expected, true))
    throw std::logic_error(
        "cml::trace::Recorder: another Recorder is still recording (CUPTI's activity buffers "
        "are per process): stop() it before starting a new one");
  active_ = true;
  {
    // A fresh start, also when tracing is off: stop() must not hand back anything that an
    // earlier Recorder's buffers delivered late.
    Store& s = store();
    std::lock_guard<std::mutex> lock(s.mu);
    s.records = Trace{};
    s.dropped = 0;
    s.problem.clear();
  }
  if (disabled_by_environment()) {
    error_ = "tracing is off (CML_TRACE=off)";
    return;
  }
  try {
    // The unified-memory counters can only be configured once CUDA (the driver) is up.
    // select_device normally did that already; cudaFree(nullptr) is the usual no-op that
    // makes sure.
    if (opts_.unified_memory) CUDA_CHECK(cudaFree(nullptr));

    add_problem(error_, register_callbacks());
    if (!error_.empty()) return;  // without callbacks nothing can be delivered
    fill_buffer_pool();
    std::string err;
    if (opts_.copies) add_problem(err, enable(CUPTI_ACTIVITY_KIND_MEMCPY));
    if (opts_.kernels) add_problem(err, enable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL));
    if (opts_.memsets) add_problem(err, enable(CUPTI_ACTIVITY_KIND_MEMSET));
    if (!err.empty()) {
      // A refused core kind (typically another CUPTI client: compute-sanitizer, ncu) makes
      // the whole trace worthless; switch off what did start so stop() has nothing to do.
      disable_all();
      error_ = err;
      return;
    }
    // Unified memory is the exception: a refusal there is recorded (the trace is not ok,
    // since what was asked for is missing) but copies and kernels keep being recorded.
    if (opts_.unified_memory) {
      add_problem(error_, enable_unified_memory());
      prime_unified_memory_once();
    }
  } catch (...) {
    // A CUDA error (the only thing that throws above) leaves no Recorder: undo what we did.
    disable_all();
    active_ = false;
    release_recording_slot();
    throw;
  }
}

Recorder::~Recorder() {
  if (!active_) return;
  try {
    (void)stop();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "warning: cml::trace::Recorder: stopping failed: %s\n", e.what());
  } catch (...) {
    std::fprintf(stderr, "warning: cml::trace::Recorder: stopping failed\n");
  }
}

Trace Recorder::stop() {
  Trace out;
  if (!active_) {
    out.error = "already stopped";
    return out;
  }
  active_ = false;

  // Whatever happens below (the synchronise can throw for an earlier asynchronous error),
  // CUPTI's kinds go off and the slot is freed, so the next Recorder starts clean.
  struct Finish {
    ~Finish() {
      disable_all();
      release_recording_slot();
    }
  } finish;

  // Every operation must have finished before its record is complete.
  CUDA_CHECK(cudaDeviceSynchronize());

  if (g_callbacks_registered && !g_enabled.empty()) {
    // Flush, switch off, flush again: the first flush delivers everything recorded, the
    // second whatever slipped in before the switch-off (other threads' work), so none of
    // it is left in CUPTI's buffers to show up in the next Recorder's trace.
    add_problem(out.error, CUPTI_CALL(cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED)));
    if (opts_.unified_memory) settle_unified_records();
    disable_all();
    add_problem(out.error, CUPTI_CALL(cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED)));
  }

  // Drops not yet counted by a buffer_completed call. Asked outside the store's lock:
  // CUPTI may hold its own lock while it calls buffer_completed, which takes ours.
  size_t late = 0;
  if (g_callbacks_registered && cuptiActivityGetNumDroppedRecords(nullptr, 0, &late) != CUPTI_SUCCESS)
    late = 0;
  {
    Store& s = store();
    std::lock_guard<std::mutex> lock(s.mu);
    s.dropped += late;
    out.copies = std::move(s.records.copies);
    out.kernels = std::move(s.records.kernels);
    out.memsets = std::move(s.records.memsets);
    out.unified = std::move(s.records.unified);
    out.dropped = s.dropped;
    add_problem(out.error, s.problem);
    s.records = Trace{};
    s.dropped = 0;
    s.problem.clear();
  }
  sort_by_start(out.copies);
  sort_by_start(out.kernels);
  sort_by_start(out.memsets);
  sort_by_start(out.unified);

  // The constructor's problems come first: they are the cause, later ones the consequence.
  std::string error = error_;
  add_problem(error, out.error);
  if (out.dropped > 0)
    add_problem(error, "CUPTI dropped " + std::to_string(out.dropped) +
                           " activity record(s) for lack of buffer space: the trace is incomplete");
  out.error = error;
  out.ok = out.error.empty();
  return out;
}

std::uint64_t timestamp_ns() {
  uint64_t t = 0;
  if (cuptiGetTimestamp(&t) != CUPTI_SUCCESS) return 0;
  return t;
}

void Recorder::discard() {
  if (!active_) return;
  CUDA_CHECK(cudaDeviceSynchronize());
  if (g_callbacks_registered && !g_enabled.empty())
    add_problem(error_, CUPTI_CALL(cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED)));
  Store& s = store();
  std::lock_guard<std::mutex> lock(s.mu);
  s.records = Trace{};
}

// --- Stream ids -----------------------------------------------------------------------
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
    void* fn = nullptr;
    cudaDriverEntryPointQueryResult found = cudaDriverEntryPointSymbolNotFound;
#if CUDART_VERSION >= 12050
    CUDA_CHECK(cudaGetDriverEntryPointByVersion("cuCtxGetCurrent", &fn, 12000, cudaEnableDefault, &found));
#else
    CUDA_CHECK(cudaGetDriverEntryPoint("cuCtxGetCurrent", &fn, cudaEnableDefault, &found));
#endif
    if (found != cudaDriverEntryPointSuccess || fn == nullptr)
      throw CheckFailed("cml::trace::stream_id_of: the CUDA driver has no cuCtxGetCurrent");
    return reinterpret_cast<GetCurrent>(fn);
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
