// Results that are wrong when read after the given stream's work, and right once the whole
// device has finished, mean one thing: the function put its work on another stream (the
// legacy default stream of a launch without a stream argument, cudaStreamPerThread...),
// which nothing on the given stream waits for. A correctness check that reads on the given
// stream would report such values as wrong; judged_on_stream names the launch instead, so
// the first failure a learner reads is the mistake they made.
#pragma once

#include <cuda_runtime_api.h>

#include <string>
#include <utility>

namespace cml::test {

// What judged_on_stream says when the results came right only after the whole device.
inline std::string ran_elsewhere(const std::string& function) {
  return "the results were wrong when read after the work of the stream " + function +
         " was given, and right once the whole device had finished: " + function +
         " put its work on another stream (a launch without a stream argument runs on the legacy default "
         "stream, which a non-blocking stream never waits for); launch on `stream`";
}

// `err`, the verdict on results read after the given stream's work ("" when right), unless
// they come right once the whole device has finished: the device is synchronised and
// `rejudge()` reads and judges them again; right then, the message is ran_elsewhere(function).
template <class Judge>
std::string named_if_elsewhere(const std::string& function, std::string err, Judge&& rejudge) {
  if (err.empty()) return err;
  if (cudaDeviceSynchronize() != cudaSuccess) return err;  // a fault: the first verdict stands
  return rejudge().empty() ? ran_elsewhere(function) : err;
}

// `judge()` reads the results after the given stream's work and returns "" when right, else
// what is wrong; it may be called twice (named_if_elsewhere).
template <class Judge>
std::string judged_on_stream(const std::string& function, Judge&& judge) {
  std::string err = judge();
  return named_if_elsewhere(function, std::move(err), judge);
}

}  // namespace cml::test
