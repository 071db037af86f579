// Nsight Compute's counters as a test's evidence: a test that needs them skips, naming why,
// where ncu is missing or may not read the counters (ERR_NVGPUCTRPERM), and fails on any
// other failure to get them: an empty profile is never evidence.
#pragma once

#include "catch.hpp"

#include <string>

// `result` is the profile's list of counters (empty when ncu gave none), `why` its error.
#define CML_REQUIRE_NCU(result, why)                                                                               \
  do {                                                                                                             \
    if ((result).empty()) {                                                                                        \
      if ((why).find("not installed") != std::string::npos || (why).find("ERR_NVGPUCTRPERM") != std::string::npos) \
        CML_SKIP(why);                                                                                             \
      FAIL("ncu did not give the counters: " << (why));                                                            \
    }                                                                                                              \
  } while (0)
