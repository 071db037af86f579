// Checks the SASS of one kernel in a binary: that an instruction appears in it (or, with
// --absent, that it does not). Used by the CPU tests on the solutions' programs, where no
// GPU is needed: the compiled code alone shows whether a kernel loads 16 bytes at a time.
//
//   sass_check BINARY KERNEL OPCODE [--absent]      e.g. ... copy_vectorized_kernel LDG.E.128
// Exit 0: as expected; 1: not; 2: usage; 77: cuobjdump/nvdisasm not available (says why).
#include "cml/errors.hpp"
#include "cml/exit_codes.hpp"
#include "cml/sass.hpp"

#include <cstdio>
#include <string>

int main(int argc, char** argv) {
  if (argc < 4 || argc > 5 || (argc == 5 && std::string(argv[4]) != "--absent")) {
    std::fprintf(stderr, "usage: sass_check BINARY KERNEL OPCODE [--absent]\n");
    return cml::kExitUsage;
  }
  const std::string binary = argv[1], kernel = argv[2], opcode = argv[3];
  const bool absent = argc == 5;
  try {
    const auto fns = cml::sass::dump(binary);
    const auto f = cml::sass::find(fns, kernel);
    if (!f) {
      std::printf("FAILED: no kernel named %s in %s\n", kernel.c_str(), binary.c_str());
      return cml::kExitWrong;
    }
    const std::size_t n = cml::sass::count(*f, opcode);
    std::printf("%s: %zu %s instruction(s)\n", f->name.c_str(), n, opcode.c_str());
    const bool ok = absent ? n == 0 : n > 0;
    std::printf("%s\n", ok ? "PASSED" : "FAILED");
    return ok ? cml::kExitOk : cml::kExitWrong;
  } catch (const cml::Skip& e) {
    std::printf("SKIP: %s\n", e.what());
    return cml::kExitSkip;
  }
}
