// The one owner of a CUDA handle (a stream, an event): it releases what it holds exactly
// once, cannot be copied and can be moved. Stream and Event (stream.hpp) are this owner with
// their create call; memory has its own owner in buffers.hpp because it also carries a length.
#pragma once

#include "errors.hpp"

#include <cuda_runtime_api.h>

#include <utility>

namespace cml::detail {

// Release is the CUDA call that ends the handle's life; `what` names it in the warning a
// failed release prints (a destructor must not throw).
template <typename H, cudaError_t (*Release)(H), const char* const& What>
class Handle {
 public:
  Handle() = default;
  Handle(const Handle&) = delete;
  Handle& operator=(const Handle&) = delete;
  Handle(Handle&& o) noexcept : h_(std::exchange(o.h_, H{})) {}
  Handle& operator=(Handle&& o) noexcept {
    if (this != &o) {
      reset();
      h_ = std::exchange(o.h_, H{});
    }
    return *this;
  }
  ~Handle() { reset(); }

  H get() const noexcept { return h_; }
  operator H() const noexcept { return h_; }
  void reset() noexcept {
    if (h_ != H{}) warn_on_error(Release(h_), What);
    h_ = H{};
  }

 protected:
  // Takes ownership of a handle a create call just returned.
  void adopt(H h) noexcept { h_ = h; }

 private:
  H h_{};
};

}  // namespace cml::detail
