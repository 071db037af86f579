// The SASS of one kernel of this test executable (the learner's or the solution's code is
// linked into it), for the mechanism tests: which instructions the compiler chose.
#pragma once

#include "catch.hpp"

#include "cml/errors.hpp"
#include "cml/sass.hpp"

#include <optional>
#include <string>

namespace cml::test {

// The kernel's SASS, or nullopt when no kernel has that name. Throws cml::Skip where
// cuobjdump is missing. The executable is disassembled once.
inline std::optional<cml::sass::Function> kernel_sass(const std::string& name) {
  static const auto fns = cml::sass::dump(cml::sass::self_executable());
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
