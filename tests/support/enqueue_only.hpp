// Whether a function "only enqueues" its work on the stream it is given, as every chapter's
// header promises for its launch functions: the call runs while that stream is captured
// into a graph. A synchronising call, a blocking copy or work on another stream breaks the
// capture (or fails inside it); what was enqueued becomes graph nodes, which we count.
#pragma once

#include "cml/errors.hpp"
#include "cml/stream.hpp"

#include <cuda_runtime_api.h>

#include <cstddef>
#include <exception>
#include <string>
#include <vector>

namespace cml::test {

// "" when `enqueue(stream)` left exactly `kernels` kernel nodes and nothing else on the
// captured stream; otherwise what it did instead, in words a learner can act on.
template <class Enqueue>
std::string enqueue_only_error(Enqueue&& enqueue, std::size_t kernels) {
  cml::Stream s;
  CUDA_CHECK(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
  try {
    enqueue(static_cast<cudaStream_t>(s));
  } catch (const std::exception& e) {
    cudaGraph_t g = nullptr;
    cudaStreamEndCapture(s, &g);  // ends the capture whatever broke it; its error is the one below
    if (g != nullptr) cudaGraphDestroy(g);
    cudaGetLastError();  // capture errors are not sticky: clear them for the next case
    return std::string("it failed while its stream was captured (a synchronising call, or work on another "
                       "stream?): ") + e.what();
  }
  cudaGraph_t g = nullptr;
  const cudaError_t end = cudaStreamEndCapture(s, &g);
  cudaGetLastError();
  if (end != cudaSuccess || g == nullptr)
    return std::string("the capture of its stream broke (") + cudaGetErrorString(end) +
           "): it synchronised or used another stream while enqueuing";
  std::size_t nodes = 0;
  CUDA_CHECK(cudaGraphGetNodes(g, nullptr, &nodes));
  std::vector<cudaGraphNode_t> list(nodes);
  if (nodes > 0) CUDA_CHECK(cudaGraphGetNodes(g, list.data(), &nodes));
  std::size_t found = 0;
  for (auto node : list) {
    cudaGraphNodeType t{};
    CUDA_CHECK(cudaGraphNodeGetType(node, &t));
    found += t == cudaGraphNodeTypeKernel ? 1 : 0;
  }
  CUDA_CHECK(cudaGraphDestroy(g));
  if (found != kernels || nodes != kernels)
    return "it enqueued " + std::to_string(nodes) + " operation(s), " + std::to_string(found) +
           " kernel(s), on its stream; want " + std::to_string(kernels) + " kernel(s) and nothing else";
  return "";
}

}  // namespace cml::test
