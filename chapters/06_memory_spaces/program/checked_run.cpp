// Chapter 06 — one checked run of a kernel that writes floats (checked_run.hpp).
#include "checked_run.hpp"

#include "harness.hpp"

#include "cml/verify.hpp"

#include <cstdio>

namespace ch06 {

bool run_and_check(Context& c, const std::string& what, const std::function<void(float*, cudaStream_t)>& work,
                   std::size_t n, const Compare& compare, const char* passed) {
  const Output out(n, c.stream);
  work(out.data(), c.stream);
  std::vector<float> got;
  std::string error = read_output(out, got, what, c.stream);
  if (error.empty()) error = compare(got);
  std::printf("%s: %s\n", what.c_str(), error.empty() ? passed : ("FAILED: " + error).c_str());
  return error.empty();
}

Compare exactly(const std::vector<float>& want) {
  return [&want](const std::vector<float>& got) {
    const auto v = cml::compare_exact(got.data(), want.data(), want.size());
    return v.ok ? std::string() : v.describe().substr(std::string("FAILED: ").size());
  };
}

}  // namespace ch06
