// Chapter 06 — what the compiler made of this program's kernels, read from the program's own
// file with cuobjdump (compiled_code.hpp): the resource and SASS columns of the step tables,
// and --mode=mechanism, the steps' checks on the compiled code alone (no GPU needed).
//
//   ./lab run 06 -- --mode=mechanism
#include "compiled_code.hpp"
#include "program.hpp"

#include "cml/errors.hpp"
#include "cml/exit_codes.hpp"
#include "cml/sass.hpp"

#include <cstdio>
#include <functional>
#include <map>
#include <string>
#include <vector>

namespace ch06 {

namespace {

// This program's kernels, read once; nullptr (and why) when cuobjdump cannot be run.
const std::map<std::string, KernelCode>* own_code(std::string& why) {
  static std::map<std::string, KernelCode> code;
  static std::string error;
  static bool done = false;
  if (!done) {
    done = true;
    try {
      code = read_code(cml::sass::self_executable());
    } catch (const cml::Skip& e) {
      error = e.what();
    }
  }
  why = error;
  return error.empty() ? &code : nullptr;
}

std::size_t count(const KernelCode& k, const std::string& what) {
  static const std::map<std::string, std::function<std::size_t(const KernelCode&)>> special = {
      {"c[0x3][imm]", [](const KernelCode& c) { return c.constant_uniform(); }},
      {"c[0x3][R]", [](const KernelCode& c) { return c.constant_divergent(); }},
      {"TEX", [](const KernelCode& c) { return c.texture_fetches(); }},
      {"other LDG", [](const KernelCode& c) { return c.count_opcode("LDG") - c.count_opcode("LDG.E.CONSTANT"); }},
  };
  const auto it = special.find(what);
  return it != special.end() ? it->second(k) : k.count_opcode(what);
}

}  // namespace

std::string compiler_cell(const std::string& name) {
  std::string why;
  const auto* code = own_code(why);
  const KernelCode* k = code ? find_kernel(*code, name) : nullptr;
  if (!k) return "-";
  return "REG " + std::to_string(k->res.regs) + ", STACK " + std::to_string(k->res.stack) + ", SHARED " +
         std::to_string(k->res.shared);
}

std::string sass_cell(const std::string& name, const std::vector<std::string>& what) {
  std::string why;
  const auto* code = own_code(why);
  if (!code) return "(" + why.substr(0, 40) + ")";
  const KernelCode* k = find_kernel(*code, name);
  if (!k) return "-";
  std::string cell;
  for (const auto& w : what) cell += (cell.empty() ? "" : ", ") + std::to_string(count(*k, w)) + " " + w;
  return cell;
}

std::vector<std::string> runtime_cells(const void* kernel) {
  cudaFuncAttributes a{};
  CUDA_CHECK(cudaFuncGetAttributes(&a, kernel));
  return {std::to_string(a.numRegs), std::to_string(a.localSizeBytes), std::to_string(a.sharedSizeBytes)};
}

int mechanism_report() {
  const auto code = read_code(cml::sass::self_executable());
  const std::string errors[] = {step1_code_error(find_kernel(code, "fir_registers_kernel")),
                                step2_code_error(find_kernel(code, "mix_constant_kernel")),
                                step3_code_error(find_kernel(code, "rotate_texture_kernel"))};
  const char* kernels[] = {"fir_registers_kernel", "mix_constant_kernel", "rotate_texture_kernel"};
  bool ok = true;
  for (int i = 0; i < 3; ++i) {
    if (const auto* k = find_kernel(code, kernels[i]))
      std::printf("%s: REG %d, STACK %d, SHARED %d, LOCAL %d; %zu LDL, %zu STL, %zu c[0x3][imm], %zu c[0x3][R], "
                  "%zu LDG, %zu TEX/TLD\n",
                  kernels[i], k->res.regs, k->res.stack, k->res.shared, k->res.local, k->count_opcode("LDL"),
                  k->count_opcode("STL"), k->constant_uniform(), k->constant_divergent(), k->global_loads(),
                  k->texture_fetches());
    std::printf("step %d: %s\n", i + 1, errors[i].empty() ? "PASSED" : ("FAILED: " + errors[i]).c_str());
    ok &= errors[i].empty();
  }
  return ok ? cml::kExitOk : cml::kExitWrong;
}

}  // namespace ch06
