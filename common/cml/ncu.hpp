// Hardware counters through Nsight Compute (ncu), for the chapters whose mechanism is a
// count: sectors per request, shared-memory wavefronts. ncu profiles a child process (the
// test executable re-running itself on a hidden target), with the clocks left alone
// (--clock-control none), in base units (bytes, never Kbyte), and its raw CSV page is
// parsed here. Where ncu is missing or the driver does not let this user read the
// counters (ERR_NVGPUCTRPERM), the caller skips with that reason.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

namespace cml::ncu {

struct KernelMetrics {
  std::string kernel;                    // the kernel's name as ncu prints it
  std::map<std::string, double> values;  // metric name -> value
};

struct Result {
  bool ok = false;
  std::string error;                   // why not: ncu missing, counters not permitted, the run failed
  std::vector<KernelMetrics> kernels;  // in launch order
  // ncu's ==ERROR== lines and the profiled run's failures, for a caller that misses a kernel
  // it expected (a kernel that could not be replayed, a target that stopped early).
  std::string trouble;
};

// The lines of ncu's output (and its child's) that say something went wrong: ==ERROR==,
// Catch2's FAILED and the message after it, a signal. At most `limit` characters. Pure text.
std::string trouble_lines(const std::string& text, std::size_t limit = 400);

// ncu's --csv --page raw output: one row per profiled kernel. Pure text, tested on the CPU.
std::vector<KernelMetrics> parse_raw_csv(const std::string& text, const std::vector<std::string>& metrics);

// The reason counters cannot be read, if ncu's output says so (ERR_NVGPUCTRPERM).
std::optional<std::string> permission_problem(const std::string& text);

// The reason, if ncu's output says another process held the GPU's profiling resources (a
// second ncu, nsys, DCGM): not the profiled program's fault. Pure text.
std::optional<std::string> busy_problem(const std::string& text);

std::optional<std::string> find_ncu();

// Runs `ncu` on `command` (program and arguments), profiling kernels whose name matches
// `kernel_regex`, collecting `metrics`. `env` entries ("NAME=value") are set for the child.
// One profile at a time on this machine: the GPU's counters serve one profiler, and tests
// run in parallel (meson, mutants.py --jobs), so each run holds a lock file
// (/tmp/cml-ncu.lock) and tries again while another tool holds the counters.
Result profile(const std::vector<std::string>& command, const std::string& kernel_regex,
               const std::vector<std::string>& metrics, const std::vector<std::string>& env = {});

}  // namespace cml::ncu
