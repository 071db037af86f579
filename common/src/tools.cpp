// See cml/tools.hpp.
#include "cml/tools.hpp"

#include <array>
#include <cmath>
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

std::optional<double> parse_seconds(const std::string& text) {
  if (text.empty()) return std::nullopt;
  char* end = nullptr;
  const double v = std::strtod(text.c_str(), &end);
  if (end == text.c_str() || *end != '\0' || !std::isfinite(v) || v <= 0) return std::nullopt;
  return v;
}

std::optional<double> case_timeout_s() {
  const char* text = std::getenv("CML_CASE_TIMEOUT");
  if (text == nullptr || *text == '\0') return 60.0;
  return parse_seconds(text);
}

}  // namespace cml::tools
