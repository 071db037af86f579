// Chapter 02 — see breakers.hpp.
#include "breakers.hpp"

#include "cml/errors.hpp"

#include <cstring>

namespace ch02 {

BrokenRun::BrokenRun(const Breaker& breaker, const Problem& problem, const Plan& plan)
    : plan_(plan), problem_(problem) {
  const auto count = static_cast<std::size_t>(plan.streams);
  switch (breaker.streams) {
    case BreakerStreams::Legacy: streams_.assign(count, cudaStreamLegacy); break;
    case BreakerStreams::Blocking:
      for (std::size_t i = 0; i < count; ++i) streams_.push_back(blocking_.emplace_back(cudaStreamDefault).get());
      break;
    case BreakerStreams::Yours:
      learner_ = std::make_unique<Streams>(plan.streams);
      streams_ = learner_->s;
      break;
  }
  if (breaker.pageable) {
    pageable_in_.reset(new int[problem.n]);
    pageable_out_.reset(new int[problem.n]);
    std::memcpy(pageable_in_.get(), problem.host_in, problem.n * sizeof(int));
    problem_.host_in = pageable_in_.get();
    problem_.host_out = pageable_out_.get();
  }
  if (breaker.after_chunk)
    problem_.after_chunk = [this, call = breaker.after_chunk](std::size_t, cudaStream_t s) { call(scratch_, s); };
}

BrokenRun::~BrokenRun() {
  cml::release_noexcept([&] { release(); }, "BrokenRun::release");
}

void BrokenRun::run() { run_staged(problem_, streams_, plan_.chunks, plan_.order); }

void BrokenRun::release() {
  CUDA_CHECK(cudaDeviceSynchronize());
  for (void* p : scratch_.device_allocations) cml::detail::warn_on_error(cudaFree(p), "cudaFree");
  for (void* p : scratch_.host_allocations) cml::detail::warn_on_error(cudaFreeHost(p), "cudaFreeHost");
  scratch_.device_allocations.clear();
  scratch_.host_allocations.clear();
}

}  // namespace ch02
