// The SASS (machine code) of the kernels in a binary, through cuobjdump: what the compiler
// really emitted for a kernel — 128-bit loads (LDG.E.128), spills (STL/LDL), asynchronous
// copies (LDGSTS) — so a test can check the mechanism in the learner's own kernel. Checks
// look at one kernel by name, so a helper kernel in the same binary cannot satisfy them.
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace cml::sass {

struct Function {
  std::string mangled;    // as cuobjdump prints it
  std::string name;       // demangled where possible
  std::vector<std::string> opcodes;  // one per instruction, with modifiers: "LDG.E.128.CONSTANT"
};

// Every function in cuobjdump -sass output. Pure text processing, tested on the CPU.
std::vector<Function> parse(const std::string& cuobjdump_sass);

// The first function whose demangled or mangled name contains `fragment`.
std::optional<Function> find(const std::vector<Function>& functions, const std::string& fragment);

// How many instructions start with `prefix` ("LDG.E.128" counts LDG.E.128.CONSTANT too).
std::size_t count(const Function& f, const std::string& prefix);

// cuobjdump (which needs nvdisasm beside it or on PATH): PATH, $CUDA_HOME/bin,
// /usr/local/cuda/bin, or the pip package nvidia-cuda-cuobjdump in the repository's .venv.
std::optional<std::string> find_cuobjdump();

// cuobjdump -sass of `binary`, parsed. Throws cml::Skip when cuobjdump cannot be found or
// run, with the reason.
std::vector<Function> dump(const std::string& binary);

// The path of the running executable (/proc/self/exe resolved).
std::string self_executable();

}  // namespace cml::sass
