// Checks the SASS of one kernel in a binary: that an instruction appears in it (or, with
// --absent, that it does not). ./lab check runs it on the learner's program without a GPU,
// and the CPU tests on the solutions': the compiled code alone shows whether a kernel loads
// 16 bytes at a time or spills. Every check of one binary shares one cuobjdump run
// (cml/sass.hpp keeps its text beside the binary).
//
//   sass_check BINARY KERNEL PATTERN [--absent] [--why TEXT]
//     PATTERN  an opcode or a dotted prefix of one (LDG.E.128, STL), or any other text to
//              find in the whole instruction (an operand: c[0x3][R)
//     --why    what a failure means, printed with it
// Exit 0: as expected; 1: not; 2: usage; 77: cuobjdump/nvdisasm not available (says why).
#include "cml/errors.hpp"
#include "cml/exit_codes.hpp"
#include "cml/sass.hpp"

#include <cstdio>
#include <string>

int main(int argc, char** argv) {
  if (argc < 4) {
    std::fprintf(stderr, "usage: sass_check BINARY KERNEL PATTERN [--absent] [--why TEXT]\n");
    return cml::kExitUsage;
  }
  const std::string binary = argv[1], kernel = argv[2], pattern = argv[3];
  bool absent = false;
  std::string why;
  for (int i = 4; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--absent") {
      absent = true;
    } else if (a == "--why" && i + 1 < argc) {
      why = argv[++i];
    } else {
      std::fprintf(stderr, "sass_check: unknown argument '%s' (usage: sass_check BINARY KERNEL PATTERN [--absent] [--why TEXT])\n",
                   a.c_str());
      return cml::kExitUsage;
    }
  }
  try {
    const auto fns = cml::sass::dump(binary);
    const auto f = cml::sass::find(fns, kernel);
    if (!f) {
      std::printf("FAILED: no kernel named %s in %s: keep the kernel's name\n", kernel.c_str(), binary.c_str());
      return cml::kExitWrong;
    }
    const std::size_t n = cml::sass::count_pattern(*f, pattern);
    const std::string example = absent && n > 0 ? cml::sass::first_containing(*f, pattern) : "";
    std::printf("%s: %zu %s instruction(s)%s%s\n", f->name.c_str(), n, pattern.c_str(),
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
