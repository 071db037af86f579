// What every chapter's GPU tests share: the device, selected once, and the rule that a
// CUPTI trace is evidence only when it worked.
#pragma once

#include "catch.hpp"

#include "cml/device.hpp"
#include "cml/trace.hpp"

namespace cml::test {

// Device 0 (or CML_DEVICE), selected once for the whole test executable. main() has already
// made sure that a device exists.
const DeviceFacts& device();

}  // namespace cml::test

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
