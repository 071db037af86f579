// The SASS of one kernel of this test executable (the learner's or the solution's code is
// linked into it), for the mechanism tests: which instructions the compiler chose.
#pragma once

#include "catch.hpp"
#include "gpu.hpp"

#include "cml/errors.hpp"
#include "cml/sass.hpp"

#include <optional>
#include <string>

namespace cml::test {

// The kernel's SASS, as the GPU of the tests runs it (a build for several GPUs holds a copy
// per architecture), or nullopt when no kernel has that name. Throws cml::Skip where
// cuobjdump is missing. The executable is disassembled once.
inline std::optional<cml::sass::Function> kernel_sass(const std::string& name) {
  device();  // selected, so that the functions are those it runs
  static const auto fns = cml::sass::run_by_current_device(cml::sass::dump(cml::sass::self_executable()));
  if (fns.empty())
    throw cml::Skip("this build holds no SASS that " + device().name + " runs (it would compile the PTX): "
                    "rebuild for it, ./lab setup --gpu-arch=auto");
  return cml::sass::find(fns, name);
}

}  // namespace cml::test

// Declares `var`, the SASS of kernel `name`: skips the test case without cuobjdump, fails
// it when the kernel is not there (the learner renamed it).
#define CML_KERNEL_SASS(var, name)                                                           \
  std::optional<cml::sass::Function> var;                                                    \
  try {                                                                                      \
    var = ::cml::test::kernel_sass(name);                                                    \
  } catch (const cml::Skip& e) {                                                             \
    CML_SKIP(e.what());                                                                      \
  }                                                                                          \
  if (!var) FAIL("no kernel named " << (name) << " in the compiled code: keep the kernel's name")
