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

}  // namespace cml::tools
