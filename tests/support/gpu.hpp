// What every chapter's GPU tests share: the device, selected once; the rule that a CUPTI
// trace is evidence only when it worked; and a skip, naming the GPU, where it lacks what a
// test case needs beyond its step's needs (needs.txt).
#pragma once

#include "catch.hpp"

#include "cml/device.hpp"
#include "cml/needs.hpp"
#include "cml/trace.hpp"

#include <string>

namespace cml::test {

// Device 0 (or CML_DEVICE), selected once for the whole test executable. main() has already
// made sure that a device exists.
const DeviceFacts& device();

}  // namespace cml::test

// What a step needs of the GPU is in needs.txt, and the test main skips the cases of a step
// this GPU cannot run before they start (runner/main.cpp). A case that needs more than its
// step (a bound that assumes two copy engines) says so here: it skips, with the reason
// composed as needs.txt's are, when the device lacks `spec` (a need as needs.txt writes one:
// "copy_engines=2"), `what` saying what it is for.
#define CML_REQUIRE_NEED(spec, what)                                                            \
  do {                                                                                          \
    const std::string cml_missing_ =                                                            \
        ::cml::needs::missing(::cml::needs::parse_need((spec), (what)), ::cml::test::device()); \
    if (!cml_missing_.empty()) CML_SKIP(cml_missing_);                                          \
  } while (0)

// Skips when tracing is off (sanitizer runs), before the work is done.
#define CML_REQUIRE_TRACING()                                                              \
  do {                                                                                     \
    if (::cml::trace::disabled_by_environment())                                           \
      CML_SKIP("the CUPTI trace is off (CML_TRACE=off), so the mechanism is not checked"); \
  } while (0)

// A failed trace is never evidence that something did not happen: fail with the reason.
#define CML_REQUIRE_TRACE_OK(trace)                                                                         \
  do {                                                                                                      \
    if (!(trace).ok) FAIL("the CUPTI trace failed, so the mechanism cannot be checked: " << (trace).error); \
  } while (0)
