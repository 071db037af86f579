// Checks the SASS of one kernel in a binary: that an instruction appears in it (or, with
// --absent, that it does not). ./lab check runs it on the learner's program without a GPU,
// and the CPU tests on the solutions': the compiled code alone shows whether a kernel loads
// 16 bytes at a time or spills. Every check of one binary shares one cuobjdump run
// (cml/sass.hpp keeps its text beside the binary).
//
//   sass_check BINARY KERNEL PATTERN [--absent] [--why TEXT] [--arch NN] [--step NN:K]
//     PATTERN  an opcode or a dotted prefix of one (LDG.E.128, STL), 'subroutine call in a
//              loop' (cml::sass::kCallInLoop), or any other text to find in the whole
//              instruction (an operand: c[0x3][R)
//     --why    what a failure means, printed with it
//     --arch   the architecture whose code to check (90: sm_90), in a binary built for
//              several; without it, the binary's only one
//     --step   the chapter and step the kernel belongs to: where needs.txt says the step
//              needs a newer GPU than the architecture checked, its code there is a trap,
//              and the check is skipped, saying so
// Exit 0: as expected; 1: not; 2: usage; 77: cuobjdump/nvdisasm not available, or the step
// cannot run on that architecture (says why).
#include "cml/errors.hpp"
#include "cml/exit_codes.hpp"
#include "cml/needs.hpp"
#include "cml/sass.hpp"

#include <cstdio>
#include <cstdlib>
#include <string>

namespace {

constexpr const char* kUsage =
    "usage: sass_check BINARY KERNEL PATTERN [--absent] [--why TEXT] [--arch NN] [--step NN:K]";

// The architecture to check: --arch's, else the binary's only one (0 when it holds several).
int chosen_arch(const std::vector<cml::sass::Function>& fns, int asked) {
  if (asked != 0) return asked;
  const auto archs = cml::sass::architectures(fns);
  return archs.size() == 1 ? archs.front() : 0;
}

// Why step `step` of `chapter` has no code worth checking on sm_`arch` ("" when it has).
std::string not_compiled_for(const std::string& chapter, int step, int arch) {
  if (arch == 0) return "";
  for (const auto& need : cml::needs::of(chapter, step))
    if (need.key == "cc" && need.value > arch)
      return "sm_" + std::to_string(arch) + ": step " + std::to_string(step) + " of chapter " + chapter + " needs " +
             cml::needs::describe(need) + " (" + need.what +
             "), which this GPU lacks: its code here shows nothing "
             "of the step (a trap, or the copies through registers), so it is not checked";
  return "";
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 4) {
    std::fprintf(stderr, "%s\n", kUsage);
    return cml::kExitUsage;
  }
  const std::string binary = argv[1], kernel = argv[2], pattern = argv[3];
  bool absent = false;
  std::string why, chapter;
  int arch = 0, step = 0;
  for (int i = 4; i < argc; ++i) {
    const std::string a = argv[i];
    const bool has_value = i + 1 < argc;
    if (a == "--absent") {
      absent = true;
    } else if (a == "--why" && has_value) {
      why = argv[++i];
    } else if (a == "--arch" && has_value) {
      arch = std::atoi(argv[++i]);
    } else if (a == "--step" && has_value) {
      const std::string v = argv[++i];
      const auto colon = v.find(':');
      chapter = v.substr(0, colon);
      step = colon == std::string::npos ? 0 : std::atoi(v.c_str() + colon + 1);
    } else {
      std::fprintf(stderr, "sass_check: unknown argument '%s' (%s)\n", a.c_str(), kUsage);
      return cml::kExitUsage;
    }
  }
  try {
    const auto fns = cml::sass::dump(binary);
    const int checked = chosen_arch(fns, arch);
    if (const std::string skip = step > 0 ? not_compiled_for(chapter, step, checked) : ""; !skip.empty()) {
      std::printf("SKIP: %s\n", skip.c_str());
      return cml::kExitSkip;
    }
    const auto f = cml::sass::find(fns, kernel, checked);
    if (!f) {
      const std::string where = checked != 0 ? " for sm_" + std::to_string(checked) : "";
      std::printf("FAILED: no kernel named %s%s in %s: keep the kernel's name\n", kernel.c_str(), where.c_str(),
                  binary.c_str());
      return cml::kExitWrong;
    }
    const std::size_t n = cml::sass::count_pattern(*f, pattern);
    const std::string example = absent && n > 0 ? cml::sass::example_of(*f, pattern) : "";
    const std::string what =
        pattern == cml::sass::kCallInLoop ? "subroutine call(s) in a loop" : pattern + " instruction(s)";
    std::printf("%s%s: %zu %s%s%s\n", f->name.c_str(),
                f->arch != 0 ? (" (sm_" + std::to_string(f->arch) + ")").c_str() : "", n, what.c_str(),
                example.empty() ? "" : ", e.g. ", example.c_str());
    const bool ok = absent ? n == 0 : n > 0;
    if (!ok && !why.empty()) std::printf("%s\n", why.c_str());
    std::printf("%s\n", ok ? "PASSED" : "FAILED");
    return ok ? cml::kExitOk : cml::kExitWrong;
  } catch (const cml::Skip& e) {
    std::printf("SKIP: %s\n", e.what());
    return cml::kExitSkip;
  }
}
