// How the supervisor names one test case to its child process, and which step a case
// belongs to. Pure string work, tested on the CPU (tests/cpu/test_isolation.cpp).
#pragma once

#include <optional>
#include <string>

namespace cml::test::isolation {

// A Catch2 test spec that matches exactly the test case called `name`: the characters the
// spec parser treats specially (`\ , [ ] " ~ *`) get a backslash. Catch2 still reads a
// leading or trailing `*` as a wildcard, so the child checks it ran that one case.
std::string escape_spec(const std::string& name);

// K of a `[stepK]` tag in `tags` ("[ch04][step2][perf]" -> 2), else K of a name that
// starts "step K" (the course's naming convention, which ./lab reads), else nothing.
std::optional<int> step_of(const std::string& tags, const std::string& name);

}  // namespace cml::test::isolation
