// Finding and running the toolkit's command-line tools (cuobjdump, ncu) from a test or a
// program: where they may be installed, and their output as text.
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace cml::tools {

// The directories to look in: PATH's, then $CUDA_HOME/bin, then /usr/local/cuda/bin.
std::vector<std::string> search_dirs();

// The first of `dirs` that holds every one of `names` (e.g. {"cuobjdump", "nvdisasm"}):
// the path of names[0] there.
std::optional<std::string> find(const std::vector<std::string>& names, const std::vector<std::string>& dirs);

struct Output {
  int status = -1;   // as pclose gives it; 0 is success
  std::string text;  // stdout and stderr together (the command should redirect 2>&1)
};

// Runs a shell command and collects what it printed.
Output run(const std::string& shell_command);

// A string quoted for the shell.
std::string quote(const std::string& s);

// "60" or "0.5": seconds above 0 as a person writes them; nothing otherwise ("5s", "inf").
std::optional<double> parse_seconds(const std::string& text);

// The seconds the test runner gives one isolated case: CML_CASE_TIMEOUT, 60 when unset,
// nothing when it is not seconds above 0. A tool a case runs (ncu) must end inside it.
std::optional<double> case_timeout_s();

}  // namespace cml::tools
