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
    throw cml::Skip("this build holds no SASS that " + device().name +
                    " runs (it would compile the PTX): "
                    "rebuild for it, ./lab setup --gpu-arch=auto");
  return cml::sass::find(fns, name);
}

// The kernel's PTX as this executable embeds it: of the entries whose demangled name
// contains `name`, the one of the newest architecture the GPU can run (a build for several
// GPUs embeds the PTX of each, and an older one may hold only the kernel's trap), or
// nullopt. Throws cml::Skip where cuobjdump is missing.
inline std::optional<cml::sass::PtxEntry> kernel_ptx(const std::string& name) {
  const int cc = device().cc();
  static const auto entries = cml::sass::dump_ptx(cml::sass::self_executable());
  std::optional<cml::sass::PtxEntry> best;
  for (const auto& e : entries)
    if ((e.name.find(name) != std::string::npos || e.mangled.find(name) != std::string::npos) && e.arch <= cc &&
        (!best || e.arch > best->arch))
      best = e;
  return best;
}

}  // namespace cml::test

// Declares `var` = fetch(name): skips the test case where cuobjdump is missing, fails it
// when the kernel is not there (the learner renamed it).
#define CML_KERNEL_CODE(var, fetch, name, where) \
  auto var = decltype(fetch(name)){};            \
  try {                                          \
    var = fetch(name);                           \
  } catch (const cml::Skip& e) {                 \
    CML_SKIP(e.what());                          \
  }                                              \
  if (!var) FAIL("no kernel named " << (name) << " in " where ": keep the kernel's name")

// Declares `var`, the SASS of kernel `name` (kernel_sass).
#define CML_KERNEL_SASS(var, name) CML_KERNEL_CODE(var, ::cml::test::kernel_sass, name, "the compiled code")

// Declares `var`, the PTX of kernel `name` (kernel_ptx).
#define CML_KERNEL_PTX(var, name) CML_KERNEL_CODE(var, ::cml::test::kernel_ptx, name, "the embedded PTX")
