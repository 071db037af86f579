// compute-sanitizer on one learner kernel: the test executable runs itself again under the
// tool, on its hidden [.target] case, with CML_TARGET saying which kernel to run once on a
// small input. A whole test executable under racecheck takes minutes; one kernel, seconds.
#pragma once

#include "catch.hpp"

#include "cml/sass.hpp"
#include "cml/tools.hpp"
#include "target_case.hpp"

#include <cstdio>
#include <cstdlib>
#include <string>

#include <sys/wait.h>

namespace cml::test {

// The compute-sanitizer tool this whole executable runs under: tests/meson.build's
// memcheck, racecheck and synccheck setups set CML_SANITIZER; "" in a plain run.
inline std::string whole_run_sanitizer() {
  const char* tool = std::getenv("CML_SANITIZER");
  return tool ? tool : "";
}

// The exit status of a [.target] run whose kernel's result came out wrong (target_wrong).
inline constexpr int kTargetWrongResult = 4;

// Ends a [.target] run whose result is wrong, with `what` on stderr. Under a sanitizer every
// thread runs many times slower while the TMA unit (bulk and tensor copies) does not, and the
// tool does not track its writes: a stage refilled before its readers were done
// shows as a wrong result where no hazard is reported.
[[noreturn]] inline void target_wrong(const std::string& what) {
  std::fprintf(stderr, "the target's result is wrong: %s\n", what.c_str());
  std::fflush(stderr);
  std::_Exit(kTargetWrongResult);
}

// "" when `tool_name` (memcheck, racecheck, synccheck) found nothing and the target's result
// was right; the tool's report, the wrong result, or the failure of a target that started,
// (cut) otherwise. Sets why_not, and returns "", when the tool is missing or did not run.
inline std::string sanitize_target(const std::string& tool_name, const std::string& target, std::string& why_not) {
  const auto tool = cml::tools::find({"compute-sanitizer"}, cml::tools::search_dirs());
  if (!tool) {
    why_not = "compute-sanitizer is not installed here: the " + tool_name + " check cannot run";
    return "";
  }
  const std::string cmd = "CML_TRACE=off CML_ISOLATE=off CML_TARGET=" + cml::tools::quote(target) + " " +
                          cml::tools::quote(*tool) + " --tool " + tool_name + " --error-exitcode 3 " +
                          cml::tools::quote(cml::sass::self_executable()) + " '[.target]' 2>&1";
  const auto out = cml::tools::run(cmd);
  const int code = WIFEXITED(out.status) ? WEXITSTATUS(out.status) : -1;  // pclose's status
  if (code == 0) return "";
  if (code == kTargetWrongResult)
    return "no hazard reported, but the kernel's result came out wrong under " + tool_name +
           ", which slows every thread and not the TMA unit:\n" + out.text.substr(0, 1500);
  if (code != 3 && out.text.find(kTargetStarted) != std::string::npos)
    return "no hazard reported, but the kernel failed under " + tool_name + " (exit " + std::to_string(code) +
           "): slowed threads let a missing wait show as a hang or a fault:\n" + out.text.substr(0, 1500);
  if (code != 3) {
    why_not = tool_name + " did not run: " + out.text.substr(0, 400);
    return "";
  }
  return out.text.substr(0, 1500);
}

}  // namespace cml::test

// Runs `tool` (memcheck, racecheck, synccheck) on the [.target] case `target` and, when
// the tool reports anything, fails with "compute-sanitizer <tool> found <found>" and then
// the tool's report: `found` is anything INFO takes, what was found where, what it means
// and what to do ("hazards in sum_cg_kernel: ..."). Skips where the tool cannot run.
#define CML_CHECK_SANITIZER(tool, target, found)                                                  \
  do {                                                                                            \
    std::string cml_why_not_;                                                                     \
    const std::string cml_report_ = ::cml::test::sanitize_target((tool), (target), cml_why_not_); \
    if (!cml_why_not_.empty()) CML_SKIP(cml_why_not_);                                            \
    INFO("compute-sanitizer " << (tool) << " found " << found << "\n" << cml_report_);            \
    CHECK(cml_report_.empty());                                                                   \
  } while (0)
