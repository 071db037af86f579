// See cml/program.hpp.
#include "cml/program.hpp"

#include "cml/errors.hpp"
#include "cml/exit_codes.hpp"

#include <cstdio>
#include <exception>

namespace cml {

int run_program(const std::function<int()>& body) noexcept {
  try {
    return body();
  } catch (const UsageError& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return kExitUsage;
  } catch (const Skip& e) {
    std::fprintf(stderr, "SKIP: %s\n", e.what());
    return kExitSkip;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return kExitWrong;
  } catch (...) {
    std::fprintf(stderr, "error: unknown exception\n");
    return kExitWrong;
  }
}

int finish(bool ok) {
  std::printf("\n%s\n", ok ? "PASSED" : "FAILED");
  return ok ? kExitOk : kExitWrong;
}

}  // namespace cml
