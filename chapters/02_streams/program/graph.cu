// Chapter 02 — see graph.hpp.
#include "graph.hpp"

#include "staged_vs_sequential.hpp"

#include "cml/errors.hpp"
#include "cml/stream.hpp"
#include "cml/table.hpp"
#include "cml/timing.hpp"
#include "cml/verify.hpp"

#include <cstdio>
#include <string>

namespace ch02 {

namespace {

// A captured graph and its executable form, released once.
class PipelineGraph {
 public:
  PipelineGraph() = default;
  PipelineGraph(const PipelineGraph&) = delete;
  PipelineGraph& operator=(const PipelineGraph&) = delete;
  ~PipelineGraph() {
    if (exec_) cml::detail::warn_on_error(cudaGraphExecDestroy(exec_), "cudaGraphExecDestroy");
    if (graph_) cml::detail::warn_on_error(cudaGraphDestroy(graph_), "cudaGraphDestroy");
  }

  // run_staged captured: `origin` forks to every stream and joins them back, so the graph
  // holds every chunk's copies and kernel with the order the streams gave them. "" when it
  // worked, else what the capture or the instantiation said.
  std::string capture(const Problem& p, const std::vector<cudaStream_t>& streams, std::size_t chunks, IssueOrder order,
                      cudaStream_t origin) {
    const cml::Event fork(cudaEventDisableTiming);
    std::vector<cml::Event> joins;
    CUDA_CHECK(cudaStreamBeginCapture(origin, cudaStreamCaptureModeThreadLocal));
    fork.record(origin);
    for (cudaStream_t s : streams) CUDA_CHECK(cudaStreamWaitEvent(s, fork, 0));
    run_staged(p, streams, chunks, order);
    for (cudaStream_t s : streams) {
      joins.emplace_back(cudaEventDisableTiming);
      // A stream the capture left (an illegal call inside run_staged) fails here or at the end.
      if (const cudaError_t e = cudaEventRecord(joins.back(), s); e != cudaSuccess) return abandon(origin, e);
      CUDA_CHECK(cudaStreamWaitEvent(origin, joins.back(), 0));
    }
    if (const cudaError_t e = cudaStreamEndCapture(origin, &graph_); e != cudaSuccess) return abandon(origin, e);
    if (const cudaError_t e = cudaGraphInstantiate(&exec_, graph_, 0); e != cudaSuccess) {
      (void)cudaGetLastError();
      return std::string("cudaGraphInstantiate: ") + cudaGetErrorString(e);
    }
    size_t nodes = 0;
    CUDA_CHECK(cudaGraphGetNodes(graph_, nullptr, &nodes));
    nodes_ = nodes;
    return "";
  }
  void launch(cudaStream_t s) const { CUDA_CHECK(cudaGraphLaunch(exec_, s)); }
  std::size_t nodes() const { return nodes_; }

 private:
  std::string abandon(cudaStream_t origin, cudaError_t e) {
    cudaGraph_t partial = nullptr;
    (void)cudaStreamEndCapture(origin, &partial);  // ends the capture whatever state it is in
    if (partial) (void)cudaGraphDestroy(partial);
    (void)cudaGetLastError();
    return std::string("stream capture: ") + cudaGetErrorString(e);
  }
  cudaGraph_t graph_ = nullptr;
  cudaGraphExec_t exec_ = nullptr;
  std::size_t nodes_ = 0;
};

}  // namespace

bool graph_mode(const Problem& p, const Plan& plan, const Phases& copies, const std::vector<cudaStream_t>& streams,
                const cml::Run& run, cudaStream_t stream) {
  using cml::fixed;
  std::printf(
      "\n== The staged pipeline as one CUDA graph: captured from your run_staged, launched whole, against issuing it "
      "call by call (%d streams, %s issue; host clock, interleaved) ==\n",
      plan.streams, plan.order == IssueOrder::Depth ? "depth-first" : "breadth-first");
  const std::vector<int> want = expected_output(p);
  const double kernel_ms = measure_kernel(p, p.cycles, run.timing, stream);
  cml::Table t("graph", {"chunks", "graph nodes", "sequential ms", "staged ms", "staged noise", "graph ms",
                         "graph noise", "staged of bound", "graph of bound", "graph over staged"});
  bool ok = true;
  for (const std::size_t chunks : {plan.chunks, 2 * plan.chunks, 4 * plan.chunks}) {
    if (chunks > p.n) break;
    PipelineGraph g;
    const std::string why = g.capture(p, streams, chunks, plan.order, stream);
    if (!why.empty()) {
      std::printf(
          "%zu chunks: your run_staged could not be captured into a graph (%s): something in it waits for the "
          "GPU or uses the legacy stream, which the tests of step 1 also refuse\n",
          chunks, why.c_str());
      return false;
    }
    const auto launch_graph = [&] { g.launch(stream); };
    ok &= cml::report(verify_pipeline(p, launch_graph, want), "the graph of " + std::to_string(chunks) + " chunks");
    const auto st = cml::time_interleaved(
        {[&](cudaStream_t x) { run_sequential(p, x); },
         [&](cudaStream_t) { run_staged(p, streams, chunks, plan.order); }, [&](cudaStream_t x) { g.launch(x); }},
        stream, run.timing, cml::Clock::Host);
    // Each against the contention-aware bound, as the program's other tables judge it.
    const Row staged{p.cycles, copies.h2d, kernel_ms, copies.d2h, copies.both, st[0], st[1]};
    const Row graph{p.cycles, copies.h2d, kernel_ms, copies.d2h, copies.both, st[0], st[2]};
    t.row({std::to_string(chunks), std::to_string(g.nodes()), fixed(st[0].median_ms, 3), fixed(st[1].median_ms, 3),
           cml::format_noise(st[1]), fixed(st[2].median_ms, 3), cml::format_noise(st[2]), fixed(staged.efficiency(), 3),
           fixed(graph.efficiency(), 3), fixed(st[1].median_ms / st[2].median_ms, 3)});
  }
  run.emit(t);
  std::printf(
      "(of bound: max(both copy directions at once, the kernel) over the row's time; graph over staged > 1: the "
      "graph is faster)\n");
  return ok;
}

}  // namespace ch02
