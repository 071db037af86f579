// See cml/sass.hpp.
#include "cml/sass.hpp"

#include "cml/errors.hpp"

#include <cxxabi.h>

#include <array>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <regex>
#include <sstream>

namespace cml::sass {

namespace {
std::string demangle(const std::string& mangled) {
  int status = 0;
  std::unique_ptr<char, void (*)(void*)> out(abi::__cxa_demangle(mangled.c_str(), nullptr, nullptr, &status), std::free);
  return status == 0 && out ? std::string(out.get()) : mangled;
}
}  // namespace

std::vector<Function> parse(const std::string& text) {
  static const std::regex function_line(R"(^\s*Function\s*:\s*(\S+))");
  // "/*0080*/   @!P0 BRA 0xc0 ;" -> BRA; "/*0010*/   LDC.64 R6, c[0x0][0x218] ;" -> LDC.64
  static const std::regex instruction(R"(^\s*/\*[0-9a-fA-F]+\*/\s+(?:@!?U?P[0-9T]\s+)?([A-Z][A-Z0-9_.]*))");
  std::vector<Function> out;
  std::istringstream in(text);
  std::string line;
  std::smatch m;
  while (std::getline(in, line)) {
    if (std::regex_search(line, m, function_line)) {
      out.push_back(Function{m[1], demangle(m[1]), {}});
    } else if (!out.empty() && std::regex_search(line, m, instruction)) {
      out.back().opcodes.push_back(m[1]);
    }
  }
  return out;
}

std::optional<Function> find(const std::vector<Function>& functions, const std::string& fragment) {
  for (const auto& f : functions)
    if (f.name.find(fragment) != std::string::npos || f.mangled.find(fragment) != std::string::npos) return f;
  return std::nullopt;
}

std::size_t count(const Function& f, const std::string& prefix) {
  std::size_t n = 0;
  for (const auto& op : f.opcodes)
    if (op.compare(0, prefix.size(), prefix) == 0 && (op.size() == prefix.size() || op[prefix.size()] == '.')) ++n;
  return n;
}

std::string self_executable() {
  std::error_code ec;
  const auto p = std::filesystem::read_symlink("/proc/self/exe", ec);
  return ec ? std::string() : p.string();
}

std::optional<std::string> find_cuobjdump() {
  namespace fs = std::filesystem;
  std::vector<fs::path> dirs;
  if (const char* path = std::getenv("PATH")) {
    std::stringstream ss(path);
    for (std::string d; std::getline(ss, d, ':');)
      if (!d.empty()) dirs.emplace_back(d);
  }
  if (const char* home = std::getenv("CUDA_HOME")) dirs.emplace_back(fs::path(home) / "bin");
  dirs.emplace_back("/usr/local/cuda/bin");
  // The pip package, in the .venv ./lab makes at the repository's root: walk up from the
  // running executable (build/... inside the repository).
  for (fs::path p = fs::path(self_executable()).parent_path(); !p.empty() && p != p.root_path(); p = p.parent_path()) {
    const fs::path venv = p / ".venv" / "lib";
    std::error_code ec;
    if (!fs::is_directory(venv, ec)) continue;
    for (const auto& py : fs::directory_iterator(venv, ec)) dirs.push_back(py.path() / "site-packages/nvidia/cu13/bin");
    break;
  }
  for (const auto& d : dirs) {
    std::error_code ec;
    if (fs::exists(d / "cuobjdump", ec) && fs::exists(d / "nvdisasm", ec)) return (d / "cuobjdump").string();
    if (fs::exists(d / "cuobjdump", ec) && std::getenv("NVDISASM_PATH")) return (d / "cuobjdump").string();
  }
  return std::nullopt;
}

std::vector<Function> dump(const std::string& binary) {
  const auto tool = find_cuobjdump();
  if (!tool)
    throw Skip("cuobjdump with nvdisasm not found (CUDA's bin folder, or pip install nvidia-cuda-cuobjdump "
               "nvidia-cuda-nvdisasm into .venv): the SASS cannot be checked");
  const std::string dir = std::filesystem::path(*tool).parent_path().string();
  // nvdisasm beside cuobjdump goes first on PATH for the child.
  const std::string command = "PATH='" + dir + "':\"$PATH\" '" + *tool + "' -sass '" + binary + "' 2>&1";
  std::unique_ptr<FILE, int (*)(FILE*)> pipe(popen(command.c_str(), "r"), pclose);
  if (!pipe) throw Skip("cannot run " + *tool);
  std::string text;
  std::array<char, 4096> buf{};
  while (const std::size_t got = std::fread(buf.data(), 1, buf.size(), pipe.get())) text.append(buf.data(), got);
  const int status = pclose(pipe.release());
  if (status != 0) throw Skip(*tool + " -sass " + binary + " failed: " + text.substr(0, 300));
  return parse(text);
}

}  // namespace cml::sass
