// See cml/sass.hpp.
#include "cml/sass.hpp"

#include "cml/errors.hpp"
#include "cml/tools.hpp"

#include <cxxabi.h>

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
  std::vector<std::string> dirs = tools::search_dirs();
  // The pip packages, in the .venv ./lab makes at the repository's root: walk up from the
  // running executable (build/... inside the repository).
  for (fs::path p = fs::path(self_executable()).parent_path(); !p.empty() && p != p.root_path(); p = p.parent_path()) {
    const fs::path venv = p / ".venv" / "lib";
    std::error_code ec;
    if (!fs::is_directory(venv, ec)) continue;
    for (const auto& py : fs::directory_iterator(venv, ec)) dirs.push_back((py.path() / "site-packages/nvidia/cu13/bin").string());
    break;
  }
  return tools::find({"cuobjdump", "nvdisasm"}, dirs);  // cuobjdump needs nvdisasm for SASS
}

std::vector<Function> dump(const std::string& binary) {
  const auto tool = find_cuobjdump();
  if (!tool)
    throw Skip("cuobjdump with nvdisasm not found (CUDA's bin folder, or pip install nvidia-cuda-cuobjdump "
               "nvidia-cuda-nvdisasm into .venv): the SASS cannot be checked");
  const std::string dir = std::filesystem::path(*tool).parent_path().string();
  // nvdisasm beside cuobjdump goes first on PATH for the child.
  const auto out = tools::run("PATH=" + tools::quote(dir) + ":\"$PATH\" " + tools::quote(*tool) + " -sass " +
                              tools::quote(binary) + " 2>&1");
  if (out.status != 0) throw Skip(*tool + " -sass " + binary + " failed: " + out.text.substr(0, 300));
  return parse(out.text);
}

}  // namespace cml::sass
