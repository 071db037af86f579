// A trace as CSV, one row per record in start order, for the plots of ./lab bench.
#include "trace_internal.hpp"

#include <algorithm>
#include <cstdint>
#include <limits>
#include <sstream>
#include <string>
#include <vector>

namespace cml::trace {

using detail::timed;

namespace {

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
  for (const auto& h : host) consider(h.when);

  struct Row {
    std::uint64_t start;
    std::string text;
  };
  std::vector<Row> rows;
  auto add = [&rows, origin](const std::string& type, const std::string& name, const std::string& kind,
                             const std::string& src, const std::string& dst, const std::string& bytes,
                             const std::string& stream, const Interval& when, const std::string& count = "") {
    std::ostringstream line;
    line << type << ',' << csv_field(name) << ',' << kind << ',' << src << ',' << dst << ',' << bytes << ',' << stream
         << ',';
    if (timed(when)) {
      // A record can start before the origin only if it is untimed; guard anyway.
      const auto rel = [origin](std::uint64_t t) { return t >= origin ? t - origin : 0; };
      line << rel(when.start) << ',' << rel(when.end);
    } else {
      line << ',';
    }
    line << ',' << count;
    rows.push_back({timed(when) ? when.start : 0, line.str()});
  };

  for (const auto& c : copies)
    add("copy", "", to_string(c.kind), to_string(c.src), to_string(c.dst), std::to_string(c.bytes),
        std::to_string(c.stream_id), c.when);
  for (const auto& k : kernels) add("kernel", k.name, "", "", "", "", std::to_string(k.stream_id), k.when);
  for (const auto& m : memsets)
    add("memset", "", "", "", to_string(m.memory), std::to_string(m.bytes), std::to_string(m.stream_id), m.when);
  for (const auto& u : unified) {
    // `value` is bytes for the transfer counters and a count of faults (or events) for the
    // others: each goes in its own column. CUPTI documents the unified records' stream id as
    // invalid, so that column stays empty.
    const bool is_bytes =
        u.kind == UnifiedKind::BytesHtoD || u.kind == UnifiedKind::BytesDtoH || u.kind == UnifiedKind::BytesDtoD;
    const std::string value = std::to_string(u.value);
    add("unified", "", to_string(u.kind), "", "", is_bytes ? value : "", "", u.when, is_bytes ? "" : value);
  }
  for (const auto& h : host) add("host", h.name, "blocked", "", "", "", "", h.when);
  std::stable_sort(rows.begin(), rows.end(), [](const Row& a, const Row& b) { return a.start < b.start; });

  std::string out = "type,name,kind,src,dst,bytes,stream,start_ns,end_ns,count\n";
  for (const Row& r : rows) out += r.text + "\n";
  return out;
}

}  // namespace cml::trace
