// See cml/sass.hpp.
#include "cml/sass.hpp"

#include "cml/errors.hpp"
#include "cml/tools.hpp"

#include <algorithm>
#include <cstring>
#include <cuda_runtime_api.h>
#include <cxxabi.h>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <regex>
#include <sstream>

namespace cml::sass {

namespace {
std::string demangle(const std::string& mangled) {
  int status = 0;
  std::unique_ptr<char, void (*)(void*)> out(abi::__cxa_demangle(mangled.c_str(), nullptr, nullptr, &status),
                                             std::free);
  return status == 0 && out ? std::string(out.get()) : mangled;
}

bool is_opcode_pattern(const std::string& p) {
  if (p.empty()) return false;
  for (char c : p)
    if (!((c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '.')) return false;
  return true;
}
}  // namespace

std::vector<Function> parse(const std::string& text) {
  static const std::regex function_line(R"(^\s*Function\s*:\s*(\S+))");
  static const std::regex arch_line(R"(^\s*arch\s*=\s*sm_(\d+))");
  // "/*0080*/   @!P0 BRA 0xc0 ;" -> BRA; "/*0010*/   LDC.64 R6, c[0x0][0x218] ;" -> LDC.64 and
  // its operands
  static const std::regex instruction(R"(^\s*/\*([0-9a-fA-F]+)\*/\s+(?:@!?U?P[0-9T]\s+)?([A-Z][A-Z0-9_.]*)([^;]*))");
  std::vector<Function> out;
  std::istringstream in(text);
  std::string line;
  std::smatch m;
  int arch = 0;
  while (std::getline(in, line)) {
    if (std::regex_search(line, m, arch_line)) {
      arch = std::stoi(m[1]);
    } else if (std::regex_search(line, m, function_line)) {
      out.push_back(Function{m[1], demangle(m[1]), arch, {}, {}, {}, {}});
    } else if (!out.empty() && std::regex_search(line, m, instruction)) {
      std::string operands = m[3];
      while (!operands.empty() && operands.back() == ' ') operands.pop_back();
      out.back().offsets.push_back(std::stoll(m[1], nullptr, 16));
      out.back().opcodes.push_back(m[2]);
      out.back().instructions.push_back(m[2].str() + operands);
    }
  }
  return out;
}

void add_resources(std::vector<Function>& functions, const std::string& res_usage) {
  static const std::regex function_line(R"(Function (\S+):)");
  static const std::regex usage(R"(REG:(\d+) STACK:(\d+) SHARED:(\d+) LOCAL:(\d+))");
  static const std::regex arch_line(R"(^\s*arch\s*=\s*sm_(\d+))");
  std::map<std::pair<int, std::string>, Resources> seen;
  std::istringstream in(res_usage);
  std::string line, current;
  std::smatch m;
  int arch = 0;
  while (std::getline(in, line)) {
    if (std::regex_search(line, m, arch_line)) {
      arch = std::stoi(m[1]);
      current.clear();
    } else if (std::regex_search(line, m, function_line)) {
      current = m[1];
    } else if (!current.empty() && std::regex_search(line, m, usage) && seen.count({arch, current}) == 0) {
      seen[{arch, current}] = {std::stoi(m[1]), std::stoi(m[2]), std::stoi(m[3]), std::stoi(m[4])};
    }
  }
  for (auto& f : functions)
    if (const auto it = seen.find({f.arch, f.mangled}); it != seen.end()) f.resources = it->second;
}

std::optional<Function> find(const std::vector<Function>& functions, const std::string& fragment, int arch) {
  for (const auto& f : functions)
    if ((arch == 0 || f.arch == arch) &&
        (f.name.find(fragment) != std::string::npos || f.mangled.find(fragment) != std::string::npos))
      return f;
  return std::nullopt;
}

std::vector<int> architectures(const std::vector<Function>& functions) {
  std::vector<int> out;
  for (const auto& f : functions)
    if (std::find(out.begin(), out.end(), f.arch) == out.end()) out.push_back(f.arch);
  std::sort(out.begin(), out.end());
  return out;
}

int architecture_run_by(const std::vector<Function>& functions, int cc) {
  int best = 0;
  for (int a : architectures(functions))
    if (a == cc || (a / 10 == cc / 10 && a < cc && a > best)) best = a;
  return best == cc ? cc : best;
}

namespace {
// The opcode without Turing's .U part: sm_75 writes a 16-byte shared load LDS.U.128, where
// sm_80 and later write LDS.128 for the same instruction.
std::string without_u(const std::string& op) {
  std::string out = op;
  for (std::size_t at; (at = out.find(".U.")) != std::string::npos;) out.erase(at, 2);
  if (out.size() > 2 && out.compare(out.size() - 2, 2, ".U") == 0) out.erase(out.size() - 2);
  return out;
}
}  // namespace

std::size_t count(const Function& f, const std::string& prefix) {
  std::size_t n = 0;
  for (const auto& raw : f.opcodes) {
    const std::string op = raw.find(".U") == std::string::npos ? raw : without_u(raw);
    if (op.compare(0, prefix.size(), prefix) == 0 && (op.size() == prefix.size() || op[prefix.size()] == '.')) ++n;
  }
  return n;
}

std::size_t count_containing(const Function& f, const std::string& text) {
  std::size_t n = 0;
  for (const auto& ins : f.instructions) n += ins.find(text) != std::string::npos ? 1 : 0;
  return n;
}

std::string first_containing(const Function& f, const std::string& text) {
  for (const auto& ins : f.instructions)
    if (ins.find(text) != std::string::npos) return ins;
  return "";
}

namespace {
long long offset_of(const Function& f, std::size_t i) {
  return i < f.offsets.size() ? f.offsets[i] : static_cast<long long>(i) * 16;
}

bool opcode_is(const std::string& op, const char* name) {
  const std::size_t n = std::strlen(name);
  return op.compare(0, n, name) == 0 && (op.size() == n || op[n] == '.');
}

// The address a branch or call goes to ("BRA 0xd40", "CALL.REL.NOINC 0x3a50"), or -1.
long long target_of(const std::string& instruction) {
  const auto at = instruction.find(" 0x");
  return at == std::string::npos ? -1 : std::stoll(instruction.substr(at + 1), nullptr, 16);
}

// Whether the code at `target` reaches a RET before an EXIT: a subroutine.
bool is_subroutine(const Function& f, long long target) {
  for (std::size_t j = 0; j < f.opcodes.size(); ++j) {
    if (offset_of(f, j) < target) continue;
    if (opcode_is(f.opcodes[j], "RET")) return true;
    if (opcode_is(f.opcodes[j], "EXIT")) return false;
  }
  return false;
}

// The indices of the CALLs of a subroutine made inside a loop, in order.
std::vector<std::size_t> calls_in_loops(const Function& f) {
  std::vector<std::pair<long long, long long>> loops;  // [target, branch] of each backward branch
  for (std::size_t i = 0; i < f.opcodes.size(); ++i)
    if (opcode_is(f.opcodes[i], "BRA"))
      if (const long long t = target_of(f.instructions[i]); t >= 0 && t < offset_of(f, i))
        loops.emplace_back(t, offset_of(f, i));
  std::vector<std::size_t> out;
  for (std::size_t i = 0; i < f.opcodes.size(); ++i) {
    if (!opcode_is(f.opcodes[i], "CALL")) continue;
    const long long t = target_of(f.instructions[i]), at = offset_of(f, i);
    if (t < 0 || !is_subroutine(f, t)) continue;
    if (std::any_of(loops.begin(), loops.end(), [&](const auto& l) { return l.first <= at && at <= l.second; }))
      out.push_back(i);
  }
  return out;
}
}  // namespace

std::size_t subroutine_calls_in_loops(const Function& f) { return calls_in_loops(f).size(); }

std::size_t count_pattern(const Function& f, const std::string& pattern) {
  if (pattern == kCallInLoop) return subroutine_calls_in_loops(f);
  return is_opcode_pattern(pattern) ? count(f, pattern) : count_containing(f, pattern);
}

std::string example_of(const Function& f, const std::string& pattern) {
  if (pattern != kCallInLoop) return first_containing(f, pattern);
  const auto calls = calls_in_loops(f);
  return calls.empty() ? std::string() : f.instructions[calls.front()];
}

std::string self_executable() {
  std::error_code ec;
  const auto p = std::filesystem::read_symlink("/proc/self/exe", ec);
  return ec ? std::string() : p.string();
}

std::optional<std::string> find_cuobjdump() {
  namespace fs = std::filesystem;
  std::vector<std::string> dirs = tools::search_dirs();
  // CML_CUOBJDUMP names one explicitly (its folder must hold nvdisasm too): it goes before
  // PATH, where ./lab puts nvcc's folder first.
  if (const char* chosen = std::getenv("CML_CUOBJDUMP"); chosen != nullptr && *chosen != '\0')
    dirs.insert(dirs.begin(), fs::path(chosen).parent_path().string());
  // The pip packages, in the .venv ./lab makes at the repository's root: walk up from the
  // running executable (build/... inside the repository).
  for (fs::path p = fs::path(self_executable()).parent_path(); !p.empty() && p != p.root_path(); p = p.parent_path()) {
    const fs::path venv = p / ".venv" / "lib";
    std::error_code ec;
    if (!fs::is_directory(venv, ec)) continue;
    for (const auto& py : fs::directory_iterator(venv, ec))
      dirs.push_back((py.path() / "site-packages/nvidia/cu13/bin").string());
    break;
  }
  return tools::find({"cuobjdump", "nvdisasm"}, dirs);  // cuobjdump needs nvdisasm for SASS
}

namespace {

// "cml-sass-cache <size> <mtime in ns>": which build of the binary a cached text is of.
std::string identity(const std::string& binary) {
  struct stat st {};
  if (::stat(binary.c_str(), &st) != 0) return "";
  return "cml-sass-cache " + std::to_string(st.st_size) + " " +
         std::to_string(static_cast<long long>(st.st_mtim.tv_sec) * 1000000000LL + st.st_mtim.tv_nsec);
}

std::string run_cuobjdump(const std::string& tool, const std::string& what, const std::string& binary) {
  const std::string dir = std::filesystem::path(tool).parent_path().string();
  // nvdisasm beside cuobjdump goes first on PATH for the child.
  const auto out = tools::run("PATH=" + tools::quote(dir) + ":\"$PATH\" " + tools::quote(tool) + " " + what + " " +
                              tools::quote(binary) + " 2>&1");
  if (out.status != 0) throw Skip(tool + " " + what + " " + binary + " failed: " + out.text.substr(0, 300));
  return out.text;
}

// The cached text when it is of this build of the binary; "" otherwise.
std::string read_cache(const std::string& path, const std::string& id) {
  std::ifstream in(path);
  std::string first;
  if (!in || !std::getline(in, first) || first != id) return "";
  std::stringstream rest;
  rest << in.rdbuf();
  return rest.str();
}

// A lock held while alive, on `path` (none where it cannot be created: each caller then
// runs cuobjdump itself, which is only slower).
class FileLock {
 public:
  explicit FileLock(const std::string& path) : fd_(::open(path.c_str(), O_CREAT | O_RDWR | O_CLOEXEC, 0644)) {
    if (fd_ >= 0) ::flock(fd_, LOCK_EX);
  }
  ~FileLock() {
    if (fd_ >= 0) ::close(fd_);  // closing releases the lock
  }
  FileLock(const FileLock&) = delete;
  FileLock& operator=(const FileLock&) = delete;

 private:
  int fd_;
};

// cuobjdump `what` of `binary`, kept beside it (BINARY.suffix) so that every check of one
// build runs cuobjdump once, even when several processes ask at the same time. `kind` names
// what is read, for the Skip when the binary or cuobjdump is missing.
std::string cached_cuobjdump(const std::string& binary, const std::string& what, const std::string& suffix,
                             const std::string& kind) {
  const std::string id = identity(binary);
  if (id.empty()) throw Skip("cannot read " + binary + ": its " + kind + " cannot be checked");
  const std::string cache = binary + "." + suffix;
  FileLock lock(cache + ".lock");
  std::string text = read_cache(cache, id);
  if (!text.empty()) return text;
  const auto tool = find_cuobjdump();
  if (!tool)
    throw Skip(
        "cuobjdump with nvdisasm not found (CUDA's bin folder, or pip install nvidia-cuda-cuobjdump "
        "nvidia-cuda-nvdisasm into .venv): the " +
        kind + " cannot be checked");
  text = run_cuobjdump(*tool, what, binary);
  // Written whole under another name, then renamed: a reader never sees half of it.
  const std::string partial = cache + ".partial";
  {
    std::ofstream out(partial, std::ios::trunc);
    out << id << "\n" << text;
  }
  if (std::rename(partial.c_str(), cache.c_str()) != 0) std::remove(partial.c_str());
  return text;
}

}  // namespace

std::vector<Function> dump(const std::string& binary) {
  // One run for both: each kernel's resource line and its SASS, in one text.
  const std::string text = cached_cuobjdump(binary, "-res-usage -sass", "sass", "SASS");
  auto functions = parse(text);
  add_resources(functions, text);
  return functions;
}

std::vector<PtxEntry> parse_ptx(const std::string& text) {
  std::vector<PtxEntry> out;
  int arch = 0;
  std::istringstream in(text);
  std::string line;
  PtxEntry* current = nullptr;
  while (std::getline(in, line)) {
    if (line.rfind("arch = sm_", 0) == 0) {
      arch = std::atoi(line.c_str() + 10);
      current = nullptr;
      continue;
    }
    const auto at = line.find(".entry ");
    if (at != std::string::npos) {
      const auto start = at + 7, end = line.find('(', start);
      const std::string mangled = line.substr(start, end == std::string::npos ? std::string::npos : end - start);
      out.push_back({mangled, demangle(mangled), arch, ""});
      current = &out.back();
    }
    if (current != nullptr) current->text += line + "\n";
  }
  return out;
}

bool mbarrier_init_fenced(const PtxEntry& entry) {
  const auto init = entry.text.find("mbarrier.init");
  if (init == std::string::npos) return true;
  return entry.text.find("fence.proxy.async", init) != std::string::npos ||
         entry.text.find("fence.mbarrier_init", init) != std::string::npos;
}

bool mbarrier_arrivals_after_sync(const PtxEntry& entry) {
  std::vector<std::string> lines;
  std::istringstream in(entry.text);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  const auto has = [](const std::string& line, const char* text) { return line.find(text) != std::string::npos; };
  for (std::size_t i = 0; i < lines.size(); ++i) {
    if (!has(lines[i], "mbarrier.arrive") || has(lines[i], "expect_tx")) continue;
    for (std::size_t j = i; j-- > 0;) {
      const std::string& l = lines[j];
      if (has(l, "bar.warp.sync") || has(l, "bar.sync") || has(l, "barrier.sync")) break;
      if (has(l, "ld.shared") || has(l, "ld.volatile.shared") || has(l, "ldmatrix")) return false;
    }
  }
  return true;
}

std::vector<PtxEntry> dump_ptx(const std::string& binary) {
  return parse_ptx(cached_cuobjdump(binary, "-ptx", "ptx", "PTX"));
}

std::vector<Function> run_by_current_device(const std::vector<Function>& functions) {
  int device = 0, major = 0, minor = 0;
  if (architectures(functions).size() < 2 || cudaGetDevice(&device) != cudaSuccess ||
      cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device) != cudaSuccess ||
      cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, device) != cudaSuccess)
    return functions;
  const int arch = architecture_run_by(functions, major * 10 + minor);
  std::vector<Function> out;
  for (const auto& f : functions)
    if (f.arch == arch) out.push_back(f);
  return out;
}

const std::vector<Function>* own_code(std::string& why) {
  static std::string error;
  static const std::vector<Function> code = [] {
    try {
      return run_by_current_device(dump(self_executable()));
    } catch (const Skip& e) {
      error = e.what();
      return std::vector<Function>{};
    }
  }();
  why = error;
  return error.empty() ? &code : nullptr;
}

}  // namespace cml::sass
