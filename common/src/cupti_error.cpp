// CUPTI errors as values: see cupti_error.hpp.
#include "cupti_error.hpp"

namespace cml {

std::string cupti_failure(CUptiResult result, const char* call) {
  if (result == CUPTI_SUCCESS) return {};
  const char* name = nullptr;
  if (cuptiGetResultString(result, &name) != CUPTI_SUCCESS || name == nullptr) name = "unknown CUPTI error";
  return std::string(call) + ": " + name + " (" + std::to_string(static_cast<int>(result)) + ")";
}

}  // namespace cml
