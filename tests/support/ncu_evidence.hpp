// Nsight Compute's counters as a test's evidence: a test that needs them skips, naming why,
// where ncu is missing, may not read the counters (ERR_NVGPUCTRPERM) or found them held by
// another profiler, and fails on any other failure to get them: an empty profile is never
// evidence.
#pragma once

#include "catch.hpp"
#include "cml/ncu.hpp"

#include <string>

namespace cml::test {

// One kernel's sectors per request for one kind of access: ncu's `sectors` counter over its
// `requests` counter, or -1 where either is missing or there was no request. Callers fail on
// -1 with their own words: a plain division of two missing counters would read 1, a pass.
inline double sectors_per_request(const cml::ncu::KernelMetrics& k, const std::string& sectors,
                                  const std::string& requests) {
  const auto s = k.values.find(sectors), r = k.values.find(requests);
  if (s == k.values.end() || r == k.values.end() || r->second <= 0 || s->second < 0) return -1.0;
  return s->second / r->second;
}

}  // namespace cml::test

// `result` is the profile's list of counters (empty when ncu gave none), `why` its error.
#define CML_REQUIRE_NCU(result, why)                                                                                 \
  do {                                                                                                               \
    if ((result).empty()) {                                                                                          \
      if ((why).find("not installed") != std::string::npos || (why).find("ERR_NVGPUCTRPERM") != std::string::npos || \
          (why).find("profiling resources") != std::string::npos)                                                    \
        CML_SKIP(why);                                                                                               \
      FAIL("ncu did not give the counters: " << (why));                                                              \
    }                                                                                                                \
  } while (0)
