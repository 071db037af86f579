// See cml/run.hpp.
#include "cml/run.hpp"

#include <cstdio>

namespace cml {

void Run::emit(const Table& table) const { table.emit(csv, out); }

void Run::write(const std::string& filename, const std::string& text) const {
  if (!out.empty()) write_file(out, filename, text);
}

Run open_run(const Cli& cli, const Footprint& footprint, bool quiet) {
  return open_run(
      cli, [&](const DeviceFacts&) { return footprint; }, quiet);
}

Run open_run(const Cli& cli, const std::function<Footprint(const DeviceFacts&)>& footprint, bool quiet) {
  Run run;
  run.timing = TimingOptions{cli.warmup(), cli.iters()};
  run.csv = cli.csv();
  run.verbose = cli.verbose();
  run.out = cli.out_dir();
  run.facts = select_device(cli.device());
  const Footprint need = footprint(run.facts);
  require_fits_device(need.bytes, run.facts, need.what);
  if (!quiet) std::printf("%s", describe(run.facts).c_str());
  if (!run.out.empty()) device_table(run.facts).write_csv(run.out);  // names the GPU in the plots
  return run;
}

}  // namespace cml
