// CUPTI errors as values, for common/'s two CUPTI users: the activity trace (trace_*.cpp)
// and the API-call recorder (api_trace.cpp). Internal to the library.
//
// CUPTI fails for reasons outside the program's control: compute-sanitizer and ncu hold
// CUPTI themselves (CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED), a device may not
// support unified-memory counters. None of that may abort a test run, so a CUPTI error is
// kept as text and comes back in the recording's `error` with ok == false; a test that
// needs the recording then skips or fails on its own terms.
#pragma once

#include <cupti.h>

#include <string>

namespace cml {

// The CUPTI counterpart of CUDA_CHECK, except that it never throws: "" on success, else
// "<call>: CUPTI_ERROR_... (<code>)".
std::string cupti_failure(CUptiResult result, const char* call);

}  // namespace cml

// cupti_failure of a call, named as written.
#define CUPTI_CALL(expr) ::cml::cupti_failure((expr), #expr)
