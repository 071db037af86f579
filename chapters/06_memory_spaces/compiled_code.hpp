// Chapter 06 — reading this chapter's compiled code, for the program (the resource columns
// and --mode=mechanism) and the tests (the steps' mechanism): each kernel's resource report
// (cuobjdump -res-usage) and its SASS, with the facts the steps are checked on and the words
// that say what is wrong. Host code only; runs without a GPU.
#pragma once

#include "cml/errors.hpp"
#include "cml/sass.hpp"
#include "cml/tools.hpp"

#include <algorithm>
#include <cstddef>
#include <filesystem>
#include <map>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

namespace ch06 {

// ---- The compiled code ------------------------------------------------------------------------

// A kernel's line of cuobjdump -res-usage: REG:47 STACK:0 SHARED:0 LOCAL:0 ...
struct Resources {
  int regs = -1, stack = -1, shared = -1, local = -1;
};

// One kernel's SASS as text lines, plus what the steps look for in it.
struct KernelCode {
  std::string mangled;
  std::vector<std::string> lines;  // instructions, "LDC.64 R12, c[0x3][R24+0x8] ;"
  Resources res;

  std::size_t count_opcode(const std::string& prefix) const {
    std::size_t n = 0;
    for (const auto& l : lines) n += l.rfind(prefix, 0) == 0 ? 1 : 0;
    return n;
  }
  std::size_t local_accesses() const { return count_opcode("LDL") + count_opcode("STL"); }
  // Reads of the user constant bank at an immediate offset: one address for the warp.
  std::size_t constant_uniform() const { return count_matching(R"(c\[0x3\]\[(0x[0-9a-f]+|UR[0-9]+[^\]]*)\])"); }
  // Reads of the user constant bank indexed by a per-thread register: one address per lane.
  std::size_t constant_divergent() const { return count_matching(R"(c\[0x3\]\[R[0-9]+)"); }
  std::size_t texture_fetches() const { return count_opcode("TEX") + count_opcode("TLD") + count_opcode("TLD4"); }
  std::size_t global_loads() const { return count_opcode("LDG"); }
  std::string first_matching(const std::string& re) const {
    const std::regex r(re);
    for (const auto& l : lines)
      if (std::regex_search(l, r)) return l;
    return "";
  }

 private:
  std::size_t count_matching(const std::string& re) const {
    const std::regex r(re);
    std::size_t n = 0;
    for (const auto& l : lines) n += std::regex_search(l, r) ? 1 : 0;
    return n;
  }
};

inline std::string cuobjdump_text(const std::string& binary, const std::string& what) {
  const auto tool = cml::sass::find_cuobjdump();
  if (!tool)
    throw cml::Skip("cuobjdump with nvdisasm not found (CUDA's bin folder, or pip install nvidia-cuda-cuobjdump "
                    "nvidia-cuda-nvdisasm into .venv): the compiled code cannot be read");
  const std::string dir = std::filesystem::path(*tool).parent_path().string();
  const auto out = cml::tools::run("PATH=" + cml::tools::quote(dir) + ":\"$PATH\" " + cml::tools::quote(*tool) + " " +
                                   what + " " + cml::tools::quote(binary) + " 2>&1");
  if (out.status != 0) throw cml::Skip(*tool + " " + what + " failed: " + out.text.substr(0, 300));
  return out.text;
}

// Every kernel of `binary` (first cubin of each name: the build targets one architecture
// first), with its SASS lines and resources. Pure text work after cuobjdump.
inline std::map<std::string, KernelCode> parse_code(const std::string& sass, const std::string& res_usage) {
  std::map<std::string, KernelCode> code;
  std::istringstream in(sass);
  std::string line;
  KernelCode* cur = nullptr;
  const std::regex fn(R"(Function : (\S+))"), ins(R"(/\*[0-9a-f]{4,}\*/\s+(.*?)\s*;)");
  std::smatch m;
  while (std::getline(in, line)) {
    if (std::regex_search(line, m, fn)) {
      const std::string name = m[1];
      cur = code.count(name) ? nullptr : &code[name];
      if (cur) cur->mangled = name;
    } else if (cur && std::regex_search(line, m, ins)) {
      std::string text = m[1];
      // Drop a predicate guard (@P0, @!PT): the opcode comes first.
      if (!text.empty() && text[0] == '@') text = text.substr(std::min(text.size(), text.find(' ') + 1));
      cur->lines.push_back(text);
    }
  }
  std::istringstream ru(res_usage);
  const std::regex rfn(R"(Function (\S+):)"), rline(R"(REG:(\d+) STACK:(\d+) SHARED:(\d+) LOCAL:(\d+))");
  std::string current;
  std::map<std::string, bool> seen;
  while (std::getline(ru, line)) {
    if (std::regex_search(line, m, rfn)) current = m[1];
    else if (!current.empty() && std::regex_search(line, m, rline) && code.count(current) && !seen[current]) {
      seen[current] = true;
      code[current].res = {std::stoi(m[1]), std::stoi(m[2]), std::stoi(m[3]), std::stoi(m[4])};
    }
  }
  return code;
}

inline std::map<std::string, KernelCode> read_code(const std::string& binary) {
  return parse_code(cuobjdump_text(binary, "-sass"), cuobjdump_text(binary, "-res-usage"));
}

// The kernel whose mangled name holds `name` (ch06::name: "4ch06" + length + name).
inline const KernelCode* find_kernel(const std::map<std::string, KernelCode>& code, const std::string& name) {
  const std::string key = "4ch06" + std::to_string(name.size()) + name;
  for (const auto& [mangled, k] : code)
    if (mangled.find(key) != std::string::npos) return &k;
  return nullptr;
}

// The steps' checks on the compiled code: "" when the kernel shows the mechanism, else what
// is wrong and where to look. The tests and --mode=mechanism say the same words.
inline std::string step1_code_error(const KernelCode* k) {
  if (!k) return "no kernel fir_registers_kernel in the compiled code: keep the kernel's name";
  std::ostringstream s;
  if (k->res.stack != 0 || k->res.local != 0)
    s << "fir_registers_kernel has a " << k->res.stack << "-byte stack frame (local memory): an array indexed by a "
      << "value known only at run time (window[r % kTaps]) cannot live in registers — make every index a constant "
      << "after unrolling (step 1). ";
  if (k->local_accesses() > 0)
    s << "its SASS has " << k->count_opcode("LDL") << " LDL and " << k->count_opcode("STL")
      << " STL (local loads and stores), e.g. \"" << k->first_matching(R"(^(LDL|STL))") << "\" (step 1). ";
  if (k->res.shared > 0)
    s << "it uses " << k->res.shared << " bytes of shared memory: the window belongs in registers, not in shared "
      << "memory or a shared-memory spill (step 1). ";
  return s.str();
}

inline std::string step2_code_error(const KernelCode* k) {
  if (!k) return "no kernel mix_constant_kernel in the compiled code: keep the kernel's name";
  std::ostringstream s;
  if (k->constant_divergent() > 0)
    s << "mix_constant_kernel reads constant memory at an address held in a per-thread register ("
      << k->constant_divergent() << " times, e.g. \"" << k->first_matching(R"(c\[0x3\]\[R[0-9]+)")
      << "\"): the lanes of a warp ask for different words of M, and the constant cache serves them one at a "
      << "time — make the index of M the same for every lane (step 2). ";
  else if (k->constant_uniform() == 0)
    s << "mix_constant_kernel never reads the user constant bank c[0x3] (every kernel reads its parameters from "
      << "c[0x0], which does not count): M must be read from c_mix (step 2). ";
  return s.str();
}

inline std::string step3_code_error(const KernelCode* k) {
  if (!k) return "no kernel rotate_texture_kernel in the compiled code: keep the kernel's name";
  std::ostringstream s;
  if (k->texture_fetches() == 0)
    s << "rotate_texture_kernel has no texture instruction (TEX/TLD): it must read the image with tex2D<float> "
      << "through the texture object (step 3). ";
  if (k->global_loads() > 0)
    s << "it still loads from global memory " << k->global_loads() << " time(s) (e.g. \""
      << k->first_matching(R"(^LDG)") << "\"): every value must come through the texture (step 3). ";
  return s.str();
}

}  // namespace ch06
