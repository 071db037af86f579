// The buffers CUPTI writes activity records into, and the process-wide store they are
// emptied into. See trace_internal.hpp for how the pieces fit.
#include "trace_internal.hpp"

#include "cupti_error.hpp"

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <iterator>
#include <mutex>
#include <string>
#include <vector>

namespace cml::trace::detail {

Store& store() {
  static Store* s = new Store;  // leaked on purpose: see the declaration
  return *s;
}

namespace {

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

void give_back_buffer(uint8_t* b) {
  if (b == nullptr) return;
  BufferPool& p = buffer_pool();
  std::lock_guard<std::mutex> lock(p.mu);
  p.free.push_back(b);
}

}  // namespace

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

}  // namespace cml::trace::detail
