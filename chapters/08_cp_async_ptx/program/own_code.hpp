// Chapter 08 — a kernel of this program as the compiler made it, for the experiments'
// tables (--mode=cache-hints, --mode=entangled): its SASS, read from the program's own file
// with cuobjdump (cml::sass), by the kernel's demangled name.
#pragma once

#include "cml/sass.hpp"

#include <optional>
#include <string>

namespace ch08 {

// The kernel whose demangled name contains `name`; nullopt, with why in `why`, when
// cuobjdump cannot be run or the name is not found.
inline std::optional<cml::sass::Function> compiled(const std::string& name, std::string& why) {
  const auto* code = cml::sass::own_code(why);
  if (code == nullptr) return std::nullopt;
  auto f = cml::sass::find(*code, name);
  if (!f) why = "no kernel " + name + " in the program's SASS";
  return f;
}

}  // namespace ch08
