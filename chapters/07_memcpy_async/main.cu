// Chapter 07 — asynchronous copies from global to shared memory (CUDA C++ Programming
// Guide, "Asynchronous Data Copies"): the same tiled computation moved through shared
// memory by registers, cg::memcpy_async, cuda::memcpy_async on a cuda::barrier, and a
// cuda::pipeline of 1-4 stages; checked against the CPU, timed beside a plain vectorised
// read-only kernel and cudaMemcpy in the same run, and swept over stages x compute x
// blocks per SM.
//
//   ./lab run 07                                     check every variant, time them at 1 GiB
//   ./lab run 07 -- --variant=pipelineN --stages=3 --compute=16 --blocks-per-sm=2
//   ./lab bench 07 -- --mode=shmoo                   the map, as shmoo.csv and shmoo.png
//   ./lab run 07 -- --mode=trivially-copyable        memcpy_async and the element type (program/)
#include "harness.hpp"
#include "memcpy_async.cuh"
#include "program/trivially_copyable.hpp"

#include "cml/buffers.hpp"
#include "cml/errors.hpp"
#include "cml/exit_codes.hpp"
#include "cml/needs.hpp"
#include "cml/program.hpp"
#include "cml/run.hpp"
#include "cml/stream.hpp"
#include "cml/table.hpp"
#include "cml/timing.hpp"

#include <cstdio>
#include <string>
#include <vector>

namespace {

using ch07::Word;
using cml::fixed;

struct Settings {
  std::string mode = "all";
  std::string variant = "all";
  std::uint64_t size = 1ull << 30;  // bytes of the array
  int stages = 3;
  int compute = 0;
  int blocks_per_sm = 4;
};

struct Context {
  const Settings& s;
  cml::Run run;
  cml::Stream stream{cudaStreamNonBlocking};
};

using ch07::make_job;

std::vector<Word> run_variant(const ch07::Variant& v, const ch07::Job& job, cudaStream_t stream) {
  CUDA_CHECK(cudaMemsetAsync(job.partial, 0xFF, job.blocks * sizeof(Word), stream));
  v.fn(job, stream);
  std::vector<Word> got(static_cast<std::size_t>(job.blocks));
  CUDA_CHECK(cudaMemcpyAsync(got.data(), job.partial, got.size() * sizeof(Word), cudaMemcpyDeviceToHost, stream));
  CUDA_CHECK(cudaStreamSynchronize(stream));
  return got;
}

bool check(Context& c) {
  std::printf("\n== Every variant against the CPU (sizes not multiples of 4, of the tile or of the stages) ==\n");
  bool ok = true;
  for (const auto& v : ch07::variants()) {
    bool variant_ok = true;
    std::size_t runs = 0;
    for (const auto& k : ch07::checked_cases()) {
      const auto host = ch07::make_input(k.n);
      const auto in = ch07::to_device(host, k.n + 1);
      cml::DeviceBuffer<Word> partial(static_cast<std::size_t>(k.blocks));
      for (const int compute : {0, 3}) {
        const auto want = ch07::reference_partials(host, k.blocks, compute);
        for (int stages = 1; stages <= (v.staged && v.fixed_stages == 0 ? ch07::kMaxStages : 1); ++stages) {
          const auto job =
              make_job(in.data(), k.n, partial.data(), k.blocks, compute, v.fixed_stages ? v.fixed_stages : stages);
          const auto r = ch07::check_partials(run_variant(v, job, c.stream), want, k.n);
          ++runs;
          if (!r.ok)
            variant_ok &= cml::report(r, std::string(v.name) + ", n = " + std::to_string(k.n) + " (" + k.what +
                                             "), compute " + std::to_string(compute) +
                                             (v.staged ? ", stages " + std::to_string(job.stages) : ""));
        }
      }
    }
    if (variant_ok) std::printf("%s (%s): PASSED in %zu runs\n", v.name, v.what, runs);
    ok &= variant_ok;
  }
  // The read-only ceiling computes the same sums: checked too, since the timed runs are
  // compared with it.
  const auto& k = ch07::checked_cases().back();
  const auto host = ch07::make_input(k.n);
  const auto in = ch07::to_device(host, k.n);
  cml::DeviceBuffer<Word> partial(static_cast<std::size_t>(k.blocks));
  const ch07::Variant ro{"read-only", "ceiling", ch07::sum_read_only, "sum_read_only_kernel", 0, false, 0};
  ok &= cml::report(
      ch07::check_partials(run_variant(ro, make_job(in.data(), k.n, partial.data(), k.blocks, 5, 1), c.stream),
                           ch07::reference_partials(host, k.blocks, 5), k.n),
      "read-only ceiling");
  return ok;
}

// What one timed point needs: the array (uploaded), the partials of each variant, and the
// grid.
struct Bench {
  std::size_t n;
  cml::DeviceBuffer<Word> in;
  cml::DeviceBuffer<Word> partial;
  cml::DeviceBuffer<Word> copy_out;
  explicit Bench(std::size_t words, std::size_t max_blocks, bool with_copy)
      : n(words),
        in(ch07::to_device(ch07::make_input(words), words)),
        partial(max_blocks),
        copy_out(with_copy ? words : 1) {}
};

struct Timed {
  std::string name;
  int stages;
  cml::Stats stats;
};

// Times the chosen variants, the read-only kernel and (if `with_copy`) cudaMemcpy device to
// device on the same array, interleaved; checks every variant's sums against read-only's.
std::vector<Timed> time_point(Context& c, Bench& b, const std::vector<const ch07::Variant*>& chosen, int blocks,
                              int compute, const std::vector<int>& stage_list, bool with_copy, bool& ok) {
  std::vector<cml::Work> work;
  std::vector<Timed> rows;
  const ch07::Variant ro{"read-only", "ceiling", ch07::sum_read_only, "sum_read_only_kernel", 0, false, 0};
  const auto add = [&](const ch07::Variant& v, int stages) {
    const auto job = make_job(b.in.data(), b.n, b.partial.data(), blocks, compute, stages);
    work.push_back([&v, job](cudaStream_t st) { v.fn(job, st); });
    rows.push_back({v.name, v.staged ? stages : 0, {}});
  };
  add(ro, 1);
  if (with_copy) {
    work.push_back([&](cudaStream_t st) {
      CUDA_CHECK(cudaMemcpyAsync(b.copy_out.data(), b.in.data(), b.n * sizeof(Word), cudaMemcpyDeviceToDevice, st));
    });
    rows.push_back({"cudaMemcpy device to device", 0, {}});
  }
  for (const auto* v : chosen) {
    if (!v->staged)
      add(*v, 1);
    else if (v->fixed_stages)
      add(*v, v->fixed_stages);
    else
      for (const int s : stage_list) add(*v, s);
  }
  const auto st = cml::time_interleaved(work, c.stream, c.run.timing);
  for (std::size_t i = 0; i < rows.size(); ++i) rows[i].stats = st[i];
  // The sums of the timed configuration, each variant against the read-only kernel's.
  const auto want = run_variant(ro, make_job(b.in.data(), b.n, b.partial.data(), blocks, compute, 1), c.stream);
  for (const auto* v : chosen)
    for (const int s :
         v->staged && !v->fixed_stages ? stage_list : std::vector<int>{v->fixed_stages ? v->fixed_stages : 1}) {
      const auto r = ch07::check_partials(
          run_variant(*v, make_job(b.in.data(), b.n, b.partial.data(), blocks, compute, s), c.stream), want, b.n);
      if (!r.ok) ok &= cml::report(r, std::string(v->name) + " (timed run, against the read-only kernel)");
    }
  return rows;
}

std::vector<const ch07::Variant*> chosen_variants(const std::string& name) {
  std::vector<const ch07::Variant*> out;
  for (const auto& v : ch07::variants())
    if (name == "all" || name == v.name || (name == "pipelineN" && std::string(v.name) == "fast")) out.push_back(&v);
  return out;
}

int blocks_for(const Context& c, int per_sm) { return per_sm * c.run.facts.sm_count; }

bool time_variants(Context& c) {
  const std::size_t n = c.s.size / sizeof(Word);
  const int blocks = blocks_for(c, c.s.blocks_per_sm);
  std::printf(
      "\n== %s words (%s MiB), compute %d, %d blocks per SM (%d blocks), GB/s = 10^9 bytes of the array "
      "read per second ==\n",
      std::to_string(n).c_str(), fixed(c.s.size / 1048576.0, 0).c_str(), c.s.compute, c.s.blocks_per_sm, blocks);
  Bench b(n, static_cast<std::size_t>(blocks), true);
  bool ok = true;
  const auto rows = time_point(c, b, chosen_variants(c.s.variant), blocks, c.s.compute, {c.s.stages}, true, ok);
  cml::Table t("variants", {"variant", "stages", "ms", "GB/s", "of read-only", "of sync"});
  double sync_ms = 0;
  for (const auto& r : rows)
    if (r.name == "sync") sync_ms = r.stats.median_ms;
  for (const auto& r : rows) {
    // cudaMemcpy reads and writes the array: its GB/s counts both, the others read only.
    const std::size_t bytes = r.name.rfind("cudaMemcpy", 0) == 0 ? 2 * n * sizeof(Word) : n * sizeof(Word);
    t.row({r.name, r.stages ? std::to_string(r.stages) : "-", cml::with_noise(r.stats),
           fixed(cml::gbps(bytes, r.stats.median_ms), 0), fixed(rows[0].stats.median_ms / r.stats.median_ms, 3),
           sync_ms > 0 ? fixed(sync_ms / r.stats.median_ms, 3) : "-"});
  }
  c.run.emit(t);
  std::printf(
      "(cudaMemcpy's GB/s counts the bytes it reads and writes; every timed variant's sums were compared "
      "with the read-only kernel's)\n");
  return ok;
}

bool shmoo(Context& c) {
  const std::vector<int> per_sm = {1, 2, 4, 8}, computes = {0, 4, 16, 64, 256}, stages = {1, 2, 3, 4};
  std::printf("\n== The map: %s MiB, every variant at stages x compute x blocks per SM ==\n",
              fixed(c.s.size / 1048576.0, 0).c_str());
  Bench b(c.s.size / sizeof(Word), static_cast<std::size_t>(blocks_for(c, per_sm.back())), false);
  std::vector<const ch07::Variant*> chosen;
  for (const auto* v : chosen_variants(c.s.variant))
    if (std::string(v->name) != "pipeline1") chosen.push_back(v);  // pipelineN at stages 1 is the same kernel
  bool ok = true;
  cml::Table t("shmoo", {"variant", "stages", "compute", "blocks per SM", "ms", "GB/s", "of read-only", "of sync"});
  for (const int bps : per_sm)
    for (const int k : computes) {
      const auto rows = time_point(c, b, chosen, blocks_for(c, bps), k, stages, false, ok);
      double sync_ms = 0;
      for (const auto& r : rows)
        if (r.name == "sync") sync_ms = r.stats.median_ms;
      for (const auto& r : rows)
        t.row({r.name, r.stages ? std::to_string(r.stages) : "-", std::to_string(k), std::to_string(bps),
               fixed(r.stats.median_ms, 4), fixed(cml::gbps(b.n * sizeof(Word), r.stats.median_ms), 0),
               fixed(rows[0].stats.median_ms / r.stats.median_ms, 3),
               sync_ms > 0 ? fixed(sync_ms / r.stats.median_ms, 3) : "-"});
    }
  c.run.emit(t);
  std::printf(
      "(blocks per SM is the grid: SMs x that; a block of 256 threads with up to 16 KiB of shared memory, so "
      "8 fit on an SM. plot.py draws shmoo.csv)\n");
  return ok;
}

const std::vector<cml::Mode<Context>>& modes() {
  static const std::vector<cml::Mode<Context>> m = {
      {"check", "every variant against the CPU on sizes that are not multiples of 4, the tile or the stages", check},
      {"variants", "time --variant at --size, --compute, --blocks-per-sm, --stages beside read-only and cudaMemcpy",
       time_variants},
      {"shmoo", "every variant at stages 1-4 x compute 0-256 x 1-8 blocks per SM (shmoo.csv)", shmoo, false},
      {"trivially-copyable",
       "cuda::memcpy_async of a trivially copyable struct and of one with a copy constructor, beside a copy "
       "constructor per element: results and SASS (runs from compute capability 7.0)",
       [](Context& c) { return ch07::trivially_copyable_mode(c.run, c.stream); }, false},
  };
  return m;
}

std::vector<std::string> variant_names() {
  std::vector<std::string> names = {"all"};
  for (const auto& v : ch07::variants()) names.emplace_back(v.name);
  return names;
}

int run(int argc, char** argv) {
  Settings s;
  cml::Cli cli = cml::chapter_cli("07",
                                  "Chapter 07 - asynchronous copies to shared memory: registers, cg::memcpy_async, "
                                  "cuda::barrier and\ncuda::pipeline (1-4 stages) on one tiled computation, timed "
                                  "beside a read-only kernel and cudaMemcpy.",
                                  modes(), s.mode);
  cli.choice("variant", s.variant, variant_names(),
             "which variant to time (pipelineN also times fast, its 16-byte twin)")
      .size("size", s.size, 4, 1ull << 40, "bytes of the array (a multiple of 4; K, M, G are binary)")
      .integer("stages", s.stages, 1, ch07::kMaxStages, "tiles in flight per block for pipelineN and fast")
      .integer("compute", s.compute, 0, 1 << 16, "dependent multiply-adds per word (0: copy-bound)")
      .integer("blocks-per-sm", s.blocks_per_sm, 1, 32, "the grid, in blocks per SM (occupancy)");
  if (!cli.parse(argc, argv)) return cml::kExitOk;
  if (s.size % sizeof(Word) != 0) throw cml::UsageError("--size must be a multiple of 4 bytes (whole words)");
  Context c{s, cml::open_run(cli, cml::Footprint{2 * s.size, "--size (the array and a copy of it)"})};
  // The API works from 7.0, with the copies through registers; the chapter's lesson is the
  // hardware copy of 8.0. Only --mode=trivially-copyable, which shows which one the GPU
  // gets, runs on 7.x.
  const bool api_only = s.mode == "trivially-copyable" && c.run.facts.cc() >= 70;
  if (const std::string why = cml::needs::missing_for("07", 0, c.run.facts); !why.empty() && !api_only)
    throw cml::Skip(why + (c.run.facts.cc() >= 70 ? " (--mode=trivially-copyable runs on it: the API without the "
                                                    "hardware copy)"
                                                  : ""));
  return cml::finish(cml::run_modes(modes(), s.mode, c));
}

}  // namespace

int main(int argc, char** argv) {
  return cml::run_program([&] { return run(argc, argv); });
}
