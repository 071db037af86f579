// See gpu.hpp.
#include "gpu.hpp"

#include <cstdlib>

namespace cml::test {

const DeviceFacts& device() {
  static const DeviceFacts facts = [] {
    const char* env = std::getenv("CML_DEVICE");
    return select_device(env != nullptr ? std::atoi(env) : 0);
  }();
  return facts;
}

}  // namespace cml::test
