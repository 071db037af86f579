// What the trace's source files share. Internal to the library: the interface is
// cml/trace.hpp.
//
// How it works. CUPTI's Activity API writes one record per GPU operation into buffers that
// we hand it (buffer_requested) and hands them back when full or flushed (buffer_completed),
// possibly on a thread of its own. Those callbacks are process-wide, so the parsed records
// go to one global store behind a mutex, and only one Recorder may use it at a time.
// stop() synchronises the device (so every record is complete), forces CUPTI to hand back
// every buffer, and moves the store into the Trace it returns.
//
// Failure policy. CUPTI errors never throw (cupti_error.hpp says why): they come back as
// Trace::error with ok == false. CUDA runtime errors are different: they mean the program
// itself is broken, and CUDA_CHECK throws as everywhere else in the course.
//
// The files, in the order a record travels:
//   trace_records.cpp         CUPTI's record layouts; one record parsed into ours
//   trace_buffers.cpp         the buffers CUPTI fills, and the store they are emptied into
//   trace_session.cpp         Recorder: CUPTI's activity kinds on and off, stop(), discard()
//   trace_unified_memory.cpp  unified-memory counters: configured, primed, settled
//   trace_queries.cpp         Trace's queries (copies_of, kernels_named, intervals)
//   trace_csv.cpp             Trace::to_csv
//   trace_names.cpp           our enums' names
//   trace_streams.cpp         stream_id_of: CUPTI's id for a stream handle
#pragma once

#include "cml/trace.hpp"

#include <cupti.h>

#include <cstdint>
#include <mutex>
#include <string>

namespace cml::trace::detail {

// Joins problems into one message; a trace can fail for more than one reason at once.
inline void add_problem(std::string& to, const std::string& what) {
  if (what.empty()) return;
  if (!to.empty()) to += "; ";
  to += what;
}

// CUPTI writes 0 for both timestamps when it could not time an operation. Such a record
// still proves the operation happened, but it has no place on a timeline.
inline bool timed(const Interval& i) { return i.start != 0 || i.end != 0; }

// --- Records (trace_records.cpp) ------------------------------------------------------
// Appends one CUPTI record to the matching list of `into`; kinds we never enable are
// skipped. The Trace being filled is only a container here: ok/error are decided in stop().
void parse(const CUpti_Activity* rec, Trace& into);

// --- Buffers and the store (trace_buffers.cpp) ----------------------------------------
// The process-wide store the buffer callbacks fill and the Recorder empties.
struct Store {
  std::mutex mu;
  Trace records;              // only the record vectors are used
  std::uint64_t dropped = 0;  // summed from cuptiActivityGetNumDroppedRecords
  std::string problem;        // a buffer CUPTI handed back that could not be read
};

// Deliberately leaked: CUPTI may deliver a last buffer from its own atexit flush, after
// function-local statics have been destroyed; a heap object that is never freed is still
// there then.
Store& store();

// Faults in the pool of buffers handed to CUPTI, so none is faulted in while tracing.
void fill_buffer_pool();
// CUPTI's activity-buffer callbacks, registered once per process by the session.
void CUPTIAPI buffer_requested(uint8_t** buffer, size_t* size, size_t* max_records);
void CUPTIAPI buffer_completed(CUcontext, uint32_t, uint8_t* buffer, size_t, size_t valid);

// --- The session (trace_session.cpp) --------------------------------------------------
// Switches an activity kind on and remembers it, so stop() switches it off: "" or why not.
std::string enable(CUpti_ActivityKind kind);

// --- Unified memory (trace_unified_memory.cpp) ----------------------------------------
// Unified-memory counters: each must be configured before the activity kind is enabled,
// and a device may refuse some (older GPUs, some platforms). Asking for all at once fails
// as a whole if one is refused, so on refusal each is configured alone and the accepted
// ones are kept. Failing to get the four the course relies on is an error (a trace without
// them cannot show that a fault did not happen); the others are extras.
std::string enable_unified_memory();
// Unified-memory records come from the driver's migration engine and may be delivered
// after the work that caused them, even after a synchronise and a forced flush: flush
// again until their count has not grown for three flushes 10 ms apart (at most 1 s).
void settle_unified_records();
// Seen on an H200 (CUDA 13): the first recording of a process that asked for
// unified-memory counters came back without host-to-device transfer records, later ones
// with them. So the first time, a small managed buffer makes one round trip and whatever
// it recorded is thrown away before the caller's work starts.
void prime_unified_memory_once();

}  // namespace cml::trace::detail
