// Chapter 06 — what the compiler made of this program's kernels, read from the program's own
// file with cuobjdump (cml::sass: SASS and -res-usage, disassembled once per build): the
// resource and SASS columns of the step tables. The steps' checks on the compiled code are
// the tests' and ./lab check 06's (no GPU needed).
#include "modes.hpp"

#include "cml/errors.hpp"
#include "cml/sass.hpp"

#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace ch06 {

namespace {

// The kernel ch06::name, by its mangled name's "4ch06" + length + name, where the bare
// name could match a longer one.
std::optional<cml::sass::Function> kernel(const std::vector<cml::sass::Function>& code, const std::string& name) {
  return cml::sass::find(code, "4ch06" + std::to_string(name.size()) + name);
}

// Reads of the user constant bank c[0x3]: at an address in a per-thread register (c[0x3][R...],
// one address per lane), or at an immediate or a uniform register's (one for the warp).
std::size_t constant_divergent(const cml::sass::Function& f) { return cml::sass::count_containing(f, "c[0x3][R"); }
std::size_t constant_uniform(const cml::sass::Function& f) {
  return cml::sass::count_containing(f, "c[0x3][") - constant_divergent(f);
}

std::size_t cell_count(const cml::sass::Function& f, const std::string& what) {
  static const std::map<std::string, std::function<std::size_t(const cml::sass::Function&)>> special = {
      {"c[0x3][imm]", constant_uniform},
      {"c[0x3][R]", constant_divergent},
      {"TEX",
       [](const cml::sass::Function& k) {
         return cml::sass::count(k, "TEX") + cml::sass::count(k, "TLD") + cml::sass::count(k, "TLD4");
       }},
      {"other LDG",
       [](const cml::sass::Function& k) { return cml::sass::count(k, "LDG") - cml::sass::count(k, "LDG.E.CONSTANT"); }},
  };
  const auto it = special.find(what);
  return it != special.end() ? it->second(f) : cml::sass::count(f, what);
}

}  // namespace

std::string compiler_cell(const std::string& name) {
  std::string why;
  const auto* code = cml::sass::own_code(why);
  const auto k = code ? kernel(*code, name) : std::nullopt;
  if (!k) return "-";
  return "REG " + std::to_string(k->resources.registers) + ", STACK " + std::to_string(k->resources.stack) +
         ", SHARED " + std::to_string(k->resources.shared);
}

std::string sass_cell(const std::string& name, const std::vector<std::string>& what) {
  std::string why;
  const auto* code = cml::sass::own_code(why);
  if (!code) return "(" + why.substr(0, 40) + ")";
  const auto k = kernel(*code, name);
  if (!k) return "-";
  std::string cell;
  for (const auto& w : what) cell += (cell.empty() ? "" : ", ") + std::to_string(cell_count(*k, w)) + " " + w;
  return cell;
}

std::optional<std::size_t> sass_count(const std::string& name, const std::string& what, std::string& why) {
  const auto* code = cml::sass::own_code(why);
  if (!code) return std::nullopt;
  const auto k = kernel(*code, name);
  if (!k) {
    why = "no kernel " + name + " in this program";
    return std::nullopt;
  }
  return cell_count(*k, what);
}

std::vector<std::string> runtime_cells(const void* kernel) {
  cudaFuncAttributes a{};
  CUDA_CHECK(cudaFuncGetAttributes(&a, kernel));
  return {std::to_string(a.numRegs), std::to_string(a.localSizeBytes), std::to_string(a.sharedSizeBytes)};
}

}  // namespace ch06
