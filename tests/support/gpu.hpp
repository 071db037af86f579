// What every chapter's GPU tests share: the device, selected once; the rule that a CUPTI
// trace is evidence only when it worked; and a skip, naming the GPU, where it lacks a
// compute capability a step needs.
#pragma once

#include "catch.hpp"

#include "cml/device.hpp"
#include "cml/trace.hpp"

#include <string>

namespace cml::test {

// Device 0 (or CML_DEVICE), selected once for the whole test executable. main() has already
// made sure that a device exists.
const DeviceFacts& device();

// "" when the device has compute capability `need` (80 for 8.0) or more; else why `what`
// cannot run on it: "<what> need compute capability 9.0; NVIDIA A100 is 8.0".
inline std::string missing_cc(int need, const std::string& what) {
  const auto& d = device();
  if (d.cc() >= need) return "";
  return what + " need compute capability " + std::to_string(need / 10) + "." + std::to_string(need % 10) + "; " +
         d.name + " is " + std::to_string(d.cc_major) + "." + std::to_string(d.cc_minor);
}

}  // namespace cml::test

// Skips the test case (it returns: a macro) when the device is older than `need`.
#define CML_REQUIRE_CC(need, what)                                                         \
  do {                                                                                     \
    const std::string cml_missing_ = ::cml::test::missing_cc((need), (what));             \
    if (!cml_missing_.empty()) CML_SKIP(cml_missing_);                                     \
  } while (0)

// The features of the chapters on asynchronous copies, by the compute capability that has them.
#define CML_REQUIRE_ASYNC_COPIES() CML_REQUIRE_CC(80, "asynchronous copies to shared memory (cp.async, LDGSTS)")
#define CML_REQUIRE_HOPPER_COPIES() \
  CML_REQUIRE_CC(90, "bulk copies, mbarrier transaction counts and TMA (UBLKCP, UTMALDG)")

// Skips when tracing is off (sanitizer runs), before the work is done.
#define CML_REQUIRE_TRACING()                                                          \
  do {                                                                                 \
    if (::cml::trace::disabled_by_environment())                                       \
      CML_SKIP("the CUPTI trace is off (CML_TRACE=off), so the mechanism is not checked"); \
  } while (0)

// A failed trace is never evidence that something did not happen: fail with the reason.
#define CML_REQUIRE_TRACE_OK(trace)                                                    \
  do {                                                                                 \
    if (!(trace).ok) FAIL("the CUPTI trace failed, so the mechanism cannot be checked: " << (trace).error); \
  } while (0)
