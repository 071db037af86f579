// Chapter 04 — the sweeps' L2 and DRAM counters (--dram), read with Nsight Compute.
#include "sweep_counters.hpp"

#include "cml/ncu.hpp"
#include "cml/sass.hpp"
#include "cml/table.hpp"

#include <cstdio>
#include <string>
#include <vector>

namespace ch04 {

using cml::fixed;

void print_sweep_counters(const cml::Run& run, std::size_t bytes, Arrays& arrays, cudaStream_t stream,
                          const char* profile_mode) {
  std::printf("\n== L2 and DRAM behind the sweeps (Nsight Compute) ==\n");
  const std::vector<std::string> metrics = {"dram__bytes_read.sum", "dram__bytes_write.sum",
                                            "lts__t_requests_srcunit_tex_op_read.sum",
                                            "lts__t_sectors_srcunit_tex_op_read.sum"};
  const auto r = cml::ncu::profile({cml::sass::self_executable(), std::string("--mode=") + profile_mode,
                                    "--size=" + std::to_string(bytes), "--device=" + std::to_string(run.facts.index)},
                                   "offset_copy|stride_copy", metrics, {"CML_TRACE=off"});
  if (!r.ok) {
    std::printf("(not measured: %s)\n", r.error.c_str());
    return;
  }
  std::vector<Pattern> sweeps = offset_sweep();
  for (const Pattern& p : stride_sweep()) sweeps.push_back(p);
  if (r.kernels.size() != sweeps.size()) {
    std::printf("(ncu profiled %zu kernels, %zu expected: not shown)\n", r.kernels.size(), sweeps.size());
    return;
  }
  cml::Table t("dram",
               {"pattern", "k", "ms", "noise", "model L1 sectors/request", "L2 sectors/request", "L2 requests/request",
                "DRAM read / wanted", "model L1 moved / wanted", "DRAM GB/s (read + write)"});
  for (std::size_t i = 0; i < sweeps.size(); ++i) {
    const Pattern& p = sweeps[i];
    const std::size_t n = sweep_n(p, bytes);
    const cml::Stats st = cml::time_work([&](cudaStream_t x) { p.launch(arrays.in.data(), arrays.out.data(), n, x); },
                                         stream, run.timing);
    const double wanted = static_cast<double>(n) * 4, requests = static_cast<double>(n) / 32;  // one per warp
    const auto value = [&](std::size_t m) {
      const auto& v = r.kernels[i].values;
      return v.count(metrics[m]) ? v.at(metrics[m]) : 0.0;
    };
    t.row({p.kind == Pattern::Offset ? "offset" : "stride", std::to_string(p.k), fixed(st.median_ms, 3),
           cml::format_noise(st), fixed(p.model_sectors_per_request(), 2), fixed(value(3) / requests, 2),
           fixed(value(2) / requests, 2), fixed(value(0) / wanted, 3), fixed(1.0 / p.model_efficiency(), 3),
           fixed(cml::gbps(static_cast<std::size_t>(value(0) + value(1)), st.median_ms), 0)});
  }
  run.emit(t);
  std::printf("(requests: one per warp and load instruction; DRAM GB/s: the bytes DRAM moved over the time)\n");
}

}  // namespace ch04
