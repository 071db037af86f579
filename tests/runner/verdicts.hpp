// What the supervisor says about a test case whose process did not report normally: the
// words a learner reads first, so each names the step, the symptom and where to look.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace cml::test::isolation {

// "step K" or "test case" when the case has no step.
std::string step_words(std::optional<int> step);

// The kernel never ended: killed after `timeout_s`.
std::string timeout_message(std::optional<int> step, double timeout_s, const std::string& name);

// The test process died of a signal (SIGSEGV, SIGABRT...).
std::string signal_message(std::optional<int> step, int signal, const std::string& name);

// The same, with what the process wrote before it died (`output`): the step and the likely
// cause first where the output names one — the last crash note of the code under test
// (cml/crash_note.hpp), or the exception that escaped where none may (std::terminate's
// "what():") — then the signal; signal_message where it names neither.
std::string crash_message(std::optional<int> step, int signal, const std::string& name, std::string_view output);

// The test process ended with an unexpected exit status, or without a report.
std::string exit_message(std::optional<int> step, int exit_code, const std::string& name);

// Why a case was not run: an earlier case of its step (`hung`, that case's name) was killed
// by the watchdog. The step's cases launch the same kernel, so each would most likely hang
// too and cost the whole limit again; the step fails by the hung case either way.
std::string not_run_message(int step, const std::string& hung);

// The first sticky CUDA error (one that ends the process's CUDA context: an illegal
// address, a device assert...) named in `text` (the child's output or report), as
// "cudaErrorIllegalAddress (an illegal memory access was encountered)"; nothing if none.
std::optional<std::string> sticky_cuda_error(std::string_view text);

// What that error means here and where to look.
std::string sticky_message(std::optional<int> step, const std::string& error, const std::string& name);

// "60" or "2.5": seconds as a person writes them.
std::string seconds_words(double seconds);

}  // namespace cml::test::isolation
