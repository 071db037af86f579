// One header for Catch2 v3 (catch_all.hpp, Ubuntu 24.04) and v2 (catch.hpp, Debian 12).
// Tests include this and nothing else of Catch2. CML_SKIP works in both: Catch2 v2 has no
// SKIP, so there it records the skip (our main counts it, never as a pass) and returns.
#pragma once

#if defined(CML_CATCH2_V3)
#include <catch2/catch_all.hpp>
#else
#include <catch2/catch.hpp>
#endif

#include <string>

#if defined(CML_CATCH2_V3)
using Catch::Approx;  // v2 has it at global scope
#endif

namespace cml::test {
// The string matchers under the names both versions understand.
#if defined(CML_CATCH2_V3)
inline auto Contains(const std::string& s) { return Catch::Matchers::ContainsSubstring(s); }
inline auto StartsWith(const std::string& s) { return Catch::Matchers::StartsWith(s); }
#else
inline auto Contains(const std::string& s) { return Catch::Matchers::Contains(s); }
inline auto StartsWith(const std::string& s) { return Catch::Matchers::StartsWith(s); }
#endif

// Remembers that the running test case skipped, and why (see main.cpp).
void note_skip(const std::string& why);
}  // namespace cml::test

#if defined(CML_CATCH2_V3)
#define CML_SKIP(msg)                      \
  do {                                     \
    std::string cml_skip_why_ = (msg);     \
    ::cml::test::note_skip(cml_skip_why_); \
    SKIP(cml_skip_why_);                   \
  } while (0)
#else
#define CML_SKIP(msg)                      \
  do {                                     \
    std::string cml_skip_why_ = (msg);     \
    ::cml::test::note_skip(cml_skip_why_); \
    WARN("SKIPPED: " << cml_skip_why_);    \
    return;                                \
  } while (0)
#endif
