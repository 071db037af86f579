// Trace's queries: the records of one kind, and their intervals on the timeline.
#include "trace_internal.hpp"

#include <string>
#include <vector>

namespace cml::trace {

using detail::timed;

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

}  // namespace cml::trace
