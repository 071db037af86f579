// The L2 set aside for persisting accesses (compute capability 8.0 and later), for chapters
// 04 (an access policy window) and 08 (cache policies measured with and without a set-aside).
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <string>

namespace cml {

// What the device says about persisting L2 (0 where it has none: before 8.0, or not lent).
struct PersistLimits {
  std::size_t max_persisting = 0;  // cudaDevAttrMaxPersistingL2CacheSize
  std::size_t max_window = 0;      // cudaDevAttrMaxAccessPolicyWindowSize
};

PersistLimits persist_limits(int device);

// cudaLimitPersistingL2CacheSize set to `bytes` for the life of the object. A device that
// refuses it (MIG, MPS) leaves why_not() set and nothing changed; otherwise the destructor
// turns persisting lines back to normal and restores the limit found, so nothing after the
// experiment runs with less L2 than before.
class PersistingCarveOut {
 public:
  explicit PersistingCarveOut(std::size_t bytes);
  PersistingCarveOut(const PersistingCarveOut&) = delete;
  PersistingCarveOut& operator=(const PersistingCarveOut&) = delete;
  ~PersistingCarveOut();
  const std::string& why_not() const { return why_not_; }
  std::size_t previous() const { return previous_; }
  std::size_t granted() const { return granted_; }

 private:
  bool attempt(cudaError_t e, const char* call);
  std::size_t previous_ = 0, granted_ = 0;
  bool set_ = false;
  std::string why_not_;
};

}  // namespace cml
