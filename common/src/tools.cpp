// See cml/tools.hpp.
#include "cml/tools.hpp"

#include <array>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <sstream>

namespace cml::tools {

std::vector<std::string> search_dirs() {
  std::vector<std::string> dirs;
  if (const char* path = std::getenv("PATH")) {
    std::stringstream ss(path);
    for (std::string d; std::getline(ss, d, ':');)
      if (!d.empty()) dirs.push_back(d);
  }
  if (const char* home = std::getenv("CUDA_HOME")) dirs.push_back(std::string(home) + "/bin");
  dirs.emplace_back("/usr/local/cuda/bin");
  return dirs;
}

std::optional<std::string> find(const std::vector<std::string>& names, const std::vector<std::string>& dirs) {
  namespace fs = std::filesystem;
  for (const auto& d : dirs) {
    bool all = !names.empty();
    for (const auto& n : names) {
      std::error_code ec;
      all = all && fs::exists(fs::path(d) / n, ec);
    }
    if (all) return (fs::path(d) / names.front()).string();
  }
  return std::nullopt;
}

Output run(const std::string& shell_command) {
  Output out;
  std::unique_ptr<FILE, int (*)(FILE*)> pipe(popen(shell_command.c_str(), "r"), pclose);
  if (!pipe) return out;
  std::array<char, 4096> buf{};
  while (const std::size_t got = std::fread(buf.data(), 1, buf.size(), pipe.get())) out.text.append(buf.data(), got);
  out.status = pclose(pipe.release());
  return out;
}

std::string quote(const std::string& s) {
  std::string out = "'";
  for (char c : s) out += (c == '\'') ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

}  // namespace cml::tools
