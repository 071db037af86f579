// The names of cml::trace's enums, as the CSV and the tests' messages print them.
#include "cml/trace.hpp"

namespace cml::trace {

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

}  // namespace cml::trace
