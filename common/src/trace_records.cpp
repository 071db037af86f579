// CUPTI's activity records, read into ours: which struct version to read through, how
// CUPTI's enums map onto cml::trace's, and the parsing of one record. See trace_internal.hpp.
#include "trace_internal.hpp"

#include <cxxabi.h>

#include <cstddef>
#include <cstdlib>
#include <cstring>
#include <string>
#include <utility>

namespace cml::trace::detail {

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
CML_SAME_OFFSET(CUpti_ActivityMemcpy6, CUpti_ActivityMemcpy5, deviceId);
CML_SAME_OFFSET(CUpti_ActivityKernel10, CUpti_ActivityKernel9, deviceId);
CML_SAME_OFFSET(CUpti_ActivityKernel10, CUpti_ActivityKernel9, start);
CML_SAME_OFFSET(CUpti_ActivityKernel10, CUpti_ActivityKernel9, end);
CML_SAME_OFFSET(CUpti_ActivityKernel10, CUpti_ActivityKernel9, streamId);
CML_SAME_OFFSET(CUpti_ActivityKernel10, CUpti_ActivityKernel9, correlationId);
CML_SAME_OFFSET(CUpti_ActivityKernel10, CUpti_ActivityKernel9, name);
CML_SAME_OFFSET(CUpti_ActivityKernel10, CUpti_ActivityKernel9, gridX);
CML_SAME_OFFSET(CUpti_ActivityKernel10, CUpti_ActivityKernel9, gridY);
CML_SAME_OFFSET(CUpti_ActivityKernel10, CUpti_ActivityKernel9, gridZ);
CML_SAME_OFFSET(CUpti_ActivityKernel10, CUpti_ActivityKernel9, blockX);
CML_SAME_OFFSET(CUpti_ActivityKernel10, CUpti_ActivityKernel9, staticSharedMemory);
CML_SAME_OFFSET(CUpti_ActivityKernel10, CUpti_ActivityKernel9, dynamicSharedMemory);
CML_SAME_OFFSET(CUpti_ActivityKernel10, CUpti_ActivityKernel9, blockY);
CML_SAME_OFFSET(CUpti_ActivityKernel10, CUpti_ActivityKernel9, blockZ);
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

}  // namespace

// --- Parsing one record ---------------------------------------------------------------
void parse(const CUpti_Activity* rec, Trace& into) {
  switch (rec->kind) {
    case CUPTI_ACTIVITY_KIND_MEMCPY: {
      const auto* r = reinterpret_cast<const MemcpyRec*>(rec);
      CopyRecord c;
      c.kind = copy_kind(r->copyKind);
      c.src = memory_kind(r->srcKind);
      c.dst = memory_kind(r->dstKind);
      c.bytes = r->bytes;
      c.device_id = c.src_device = c.dst_device = r->deviceId;
      c.stream_id = r->streamId;
      c.correlation_id = r->correlationId;
      c.when = {r->start, r->end};
      into.copies.push_back(c);
      break;
    }
    // Copies between two devices come as MEMCPY2 records, with both ends.
    case CUPTI_ACTIVITY_KIND_MEMCPY2: {
      const auto* r = reinterpret_cast<const CUpti_ActivityMemcpyPtoP4*>(rec);
      CopyRecord c;
      c.kind = copy_kind(r->copyKind);
      c.src = memory_kind(r->srcKind);
      c.dst = memory_kind(r->dstKind);
      c.bytes = r->bytes;
      c.device_id = r->deviceId;
      c.src_device = r->srcDeviceId;
      c.dst_device = r->dstDeviceId;
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
      k.device_id = r->deviceId;
      k.stream_id = r->streamId;
      k.correlation_id = r->correlationId;
      k.grid = {r->gridX, r->gridY, r->gridZ};
      k.block = {r->blockX, r->blockY, r->blockZ};
      k.shared_bytes = r->staticSharedMemory + r->dynamicSharedMemory;
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
        default: break;
      }
      into.unified.push_back(u);
      break;
    }
    default: break;  // kinds we never enable (another CUPTI client in the process may have)
  }
}

}  // namespace cml::trace::detail
