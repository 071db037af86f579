// Chapter 10 — moving data between GPUs: the peer bandwidth matrix with your copy beside
// it, your kernel that reads the other GPU's memory against a peer copy of the same bytes,
// your halo exchange against the same sweeps with no exchange, and your ring all-reduce
// against NCCL's. Needs two GPUs or more; each result is checked against the CPU first.
//
//   ./lab run 10                          everything, with your exercise.cu
//   ./lab run 10 -- --mode=matrix         peer bandwidth, one way and both ways, every pair
//   ./lab run 10 -- --mode=peer-kernel    your add_from_peer against a peer copy
//   ./lab run 10 -- --mode=halo           your run_jacobi against the sweeps alone (--rows, --cols, --iterations)
//   ./lab run 10 -- --mode=ring           your ring against NCCL, 1 MiB to --size
#include "harness.hpp"
#include "multi_gpu.cuh"

#include "cml/api_trace.hpp"
#include "cml/errors.hpp"
#include "cml/exit_codes.hpp"
#include "cml/program.hpp"
#include "cml/run.hpp"
#include "cml/table.hpp"
#include "cml/timing.hpp"
#include "cml/trace.hpp"
#include "cml/verify.hpp"

#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>

namespace {

using cml::fixed;
using cml::format_noise;

struct Settings {
  std::string mode = "all";
  std::size_t bytes = 256ull << 20;  // each copy of the matrix, and the ring's largest size
  int rows = 8192, cols = 8192, iterations = 40;
};

struct Context {
  const Settings& s;
  const cml::Run& run;
  ch10::Team& team;
  ch10::PeerMatrix peers;
};

// Times host-clock work that ends by waiting for every stream of the team.
std::vector<cml::Stats> time_team(Context& c, const std::vector<cml::Work>& work) {
  std::vector<cml::Work> waited;
  for (const auto& w : work)
    waited.push_back([&c, w](cudaStream_t s) {
      w(s);
      c.team.synchronize();
    });
  return cml::time_interleaved(waited, c.team[0].compute, c.run.timing, cml::Clock::Host);
}

// ---- Step 1: the matrix ------------------------------------------------------------------------

bool matrix(Context& c) {
  const std::size_t n = c.s.bytes / sizeof(float);
  std::printf("\n== Peer bandwidth: %s per copy, every ordered pair (host clock, interleaved) ==\n",
              cml::format_bytes(c.s.bytes).c_str());
  std::printf("the hardware allows: %s; your enable_peer_access enabled: %s\n",
              ch10::describe(ch10::peer_capability(c.team.devices())).c_str(), ch10::describe(c.peers).c_str());
  std::vector<ch10::DeviceArray> src, dst;
  for (int i = 0; i < c.team.size(); ++i) {
    src.emplace_back(c.team[i].device, n);
    dst.emplace_back(c.team[i].device, n);
    src.back().upload(std::vector<float>(n, static_cast<float>(i + 1)));
  }
  const ch10::PeerMatrix none = [&] {
    ch10::PeerMatrix m = c.peers;
    for (auto& row : m.enabled) std::fill(std::begin(row), std::end(row), false);
    return m;
  }();
  cml::Table t("matrix", {"from", "to", "your path", "peer copy GB/s", "noise", "yours GB/s", "yours / peer",
                          "through the host GB/s", "both ways at once GB/s"});
  bool ok = true;
  for (int a = 0; a < c.team.size(); ++a)
    for (int b = 0; b < c.team.size(); ++b) {
      if (a == b) continue;
      const ch10::Link ab = c.team.link(a, b), ba = c.team.link(b, a);
      ch10::Path path = ch10::Path::ThroughHost;
      const auto st = time_team(
          c, {[&](cudaStream_t) {
                const ch10::OnDevice on(ab.src_device);
                CUDA_CHECK(cudaMemcpyPeerAsync(dst[b].data(), ab.dst_device, src[a].data(), ab.src_device, c.s.bytes,
                                               ab.src_stream));
              },
              [&](cudaStream_t) { path = ch10::copy_between(dst[b].data(), src[a].data(), c.s.bytes, ab, c.peers); },
              [&](cudaStream_t) { (void)ch10::copy_between(dst[b].data(), src[a].data(), c.s.bytes, ab, none); },
              [&](cudaStream_t) {
                const ch10::OnDevice on(ab.src_device);
                CUDA_CHECK(cudaMemcpyPeerAsync(dst[b].data(), ab.dst_device, src[a].data(), ab.src_device, c.s.bytes,
                                               ab.src_stream));
                const ch10::OnDevice back(ba.src_device);
                CUDA_CHECK(cudaMemcpyPeerAsync(dst[a].data(), ba.dst_device, src[b].data(), ba.src_device, c.s.bytes,
                                               ba.src_stream));
              }});
      const std::vector<float> got = dst[b].download();
      const bool right = std::all_of(got.begin(), got.end(), [&](float v) { return v == static_cast<float>(a + 1); });
      ok &= right;
      const auto gbps = [&](const cml::Stats& x, double copies) {
        return fixed(cml::gbps(static_cast<std::size_t>(copies * static_cast<double>(c.s.bytes)), x.median_ms), 1);
      };
      t.row({std::to_string(ab.src_device), std::to_string(ab.dst_device),
             right ? (path == ch10::Path::Peer ? "peer" : "through the host") : "WRONG RESULT", gbps(st[0], 1),
             format_noise(st[0]), gbps(st[1], 1), fixed(st[0].median_ms / st[1].median_ms, 3), gbps(st[2], 1),
             gbps(st[3], 2)});
    }
  c.run.emit(t);
  std::printf(
      "(yours / peer: your copy_between's rate over cudaMemcpyPeerAsync's, 1.0 at best; both ways: the two\n"
      " directions' bytes over the time both took)\n");
  return ok;
}

// ---- Step 2: a kernel over the link --------------------------------------------------------

bool peer_kernel(Context& c) {
  const std::size_t n = c.s.bytes / sizeof(float);
  const int a = 0, b = 1;
  const int dev_a = c.team[a].device, dev_b = c.team[b].device;
  std::printf("\n== Device %d's kernel reads device %d's memory: %s (host clock, interleaved) ==\n", dev_a, dev_b,
              cml::format_bytes(c.s.bytes).c_str());
  if (!c.peers.reaches(dev_a, dev_b)) {
    std::printf(
        "your enable_peer_access did not enable %d -> %d: a kernel cannot read the other GPU's memory "
        "(step 1 first)\n",
        dev_a, dev_b);
    return false;
  }
  ch10::DeviceArray local(dev_a, n), scratch(dev_a, n), remote(dev_b, n);
  std::vector<float> lv(n), rv(n);
  for (std::size_t i = 0; i < n; ++i) lv[i] = static_cast<float>(i % 97), rv[i] = static_cast<float>(i % 89);
  local.upload(lv);
  remote.upload(rv);
  ch10::add_from_peer(local.data(), remote.data(), n, dev_a, c.team[a].compute);
  const std::vector<float> got = local.download();
  std::size_t wrong = 0;
  for (std::size_t i = 0; i < n; ++i) wrong += got[i] != lv[i] + rv[i];
  const auto st = time_team(
      c, {[&](cudaStream_t) {
            const ch10::OnDevice on(dev_a);
            CUDA_CHECK(cudaMemcpyPeerAsync(scratch.data(), dev_a, remote.data(), dev_b, c.s.bytes, c.team[a].compute));
          },
          [&](cudaStream_t) { ch10::add_from_peer(local.data(), remote.data(), n, dev_a, c.team[a].compute); }});
  cml::Table t("peer_kernel", {"what", "median ms", "noise", "GB/s over the link", "of the peer copy"});
  t.row({"cudaMemcpyPeerAsync of the same bytes", fixed(st[0].median_ms, 3), format_noise(st[0]),
         fixed(cml::gbps(c.s.bytes, st[0].median_ms), 1), "1.000"});
  t.row({"your add_from_peer (reads them, adds them in place)", fixed(st[1].median_ms, 3), format_noise(st[1]),
         fixed(cml::gbps(c.s.bytes, st[1].median_ms), 1), fixed(st[0].median_ms / st[1].median_ms, 3)});
  c.run.emit(t);
  std::printf("add_from_peer: %s\n", wrong == 0 ? "PASSED" : (std::to_string(wrong) + " elements wrong").c_str());
  return wrong == 0;
}

// ---- Step 3: the halo exchange ---------------------------------------------------------------

// The same sweeps with no exchange at all: every band all its rows, on its compute stream.
// What the halo exchange costs is the difference (its result is wrong at the bands' edges).
void sweeps_alone(std::vector<ch10::Slab>& slabs, int cols, int iterations) {
  for (int it = 0; it < iterations; ++it)
    for (ch10::Slab& s : slabs) {
      const ch10::OnDevice on(s.device);
      ch10::launch_jacobi_rows(s.cur, s.next, cols, 1, s.rows, s.compute);
      std::swap(s.cur, s.next);
    }
}

bool halo(Context& c) {
  // First the result, on a grid small enough for the CPU: rows that do not divide among the
  // GPUs, an odd count of columns and of sweeps.
  {
    const int rows = 1000 + c.team.size() - 1, cols = 517, iterations = 7;
    const std::vector<float> grid = ch10::initial_grid(rows, cols, 3);
    ch10::Bands bands(c.team, grid, rows, cols);
    ch10::run_jacobi(bands.slabs().data(), c.team.size(), cols, iterations, c.peers);
    c.team.synchronize();
    const std::vector<float> want = ch10::jacobi_reference(grid, rows, cols, iterations);
    if (!cml::report(cml::compare_exact(bands.gather().data(), want.data(), want.size()),
                     "run_jacobi on " + std::to_string(rows) + " x " + std::to_string(cols)))
      return false;
  }
  const int rows = c.s.rows, cols = c.s.cols, iterations = c.s.iterations;
  std::printf("\n== The halo exchange: %d x %d floats over %d GPUs, %d sweeps (host clock, interleaved) ==\n", rows,
              cols, c.team.size(), iterations);
  ch10::Bands bands(c.team, ch10::initial_grid(rows, cols, 5), rows, cols);
  const auto st = time_team(
      c, {[&](cudaStream_t) { sweeps_alone(bands.slabs(), cols, iterations); },
          [&](cudaStream_t) { ch10::run_jacobi(bands.slabs().data(), c.team.size(), cols, iterations, c.peers); }});
  cml::Table t("halo", {"what", "median ms", "noise", "per sweep us", "of the sweeps alone"});
  t.row({"the sweeps alone, no exchange", fixed(st[0].median_ms, 3), format_noise(st[0]),
         fixed(st[0].median_ms * 1e3 / iterations, 1), "1.000"});
  t.row({"your run_jacobi", fixed(st[1].median_ms, 3), format_noise(st[1]),
         fixed(st[1].median_ms * 1e3 / iterations, 1), fixed(st[0].median_ms / st[1].median_ms, 3)});
  c.run.emit(t);
  // A few sweeps under the CUPTI trace, for ./lab profile 10 and the plot.
  cml::trace::Recorder recorder;
  ch10::run_jacobi(bands.slabs().data(), c.team.size(), cols, 2, c.peers);
  c.team.synchronize();  // every GPU's records of the warm-up in before they are discarded
  recorder.discard();
  cml::api::Recorder calls;  // which calls kept the host waiting, for the timeline
  ch10::run_jacobi(bands.slabs().data(), c.team.size(), cols, 4, c.peers);
  const std::vector<cml::trace::HostRecord> waits = cml::api::long_calls(calls.stop());
  c.team.synchronize();
  cml::trace::Trace trace = recorder.stop();
  trace.host = waits;
  if (trace.ok) {
    c.run.write("timeline_halo.csv", trace.to_csv());
    const auto between = std::count_if(trace.copies.begin(), trace.copies.end(),
                                       [](const cml::trace::CopyRecord& r) { return r.src_device != r.dst_device; });
    std::printf("trace of 4 sweeps: %zu copies between GPUs, %zu kernels\n", static_cast<std::size_t>(between),
                trace.kernels.size());

  } else {
    std::printf("(trace unavailable: %s)\n", trace.error.c_str());
  }
  return true;
}

// ---- Step 4: the ring -----------------------------------------------------------------------------

bool ring(Context& c) {
  const int count = c.team.size();
  std::printf("\n== All-reduce over %d GPUs: your ring against NCCL (host clock, interleaved) ==\n", count);
  if (!ch10::have_nccl())
    std::printf("(this build has no NCCL: only your ring is timed; ./lab doctor says how to get it)\n");
  cml::Table t("ring", {"bytes", "yours ms", "noise", "yours bus GB/s", "NCCL ms", "NCCL bus GB/s", "yours / NCCL"});
  bool ok = true;
  for (std::size_t bytes = std::size_t{1} << 20; bytes <= c.s.bytes; bytes *= 4) {
    // Not a multiple of the GPU count, nor of 4: every chunk boundary lands anywhere.
    const std::size_t n = bytes / sizeof(float) - 3;
    ch10::Ring r(c.team, n);
    ch10::ring_all_reduce(r.ranks().data(), count, n, c.peers);
    c.team.synchronize();
    const std::string wrong = r.first_wrong();
    if (!wrong.empty()) {
      std::printf("ring_all_reduce of %zu floats: FAILED at %s\n", n, wrong.c_str());
      ok = false;
      break;
    }
    std::vector<cml::Work> work = {[&](cudaStream_t) { ch10::ring_all_reduce(r.ranks().data(), count, n, c.peers); }};
    if (ch10::have_nccl()) work.push_back([&](cudaStream_t) { ch10::nccl_all_reduce(r.ranks().data(), count, n); });
    const auto st = time_team(c, work);
    // Bus bandwidth as nccl-tests defines it: each rank sends and receives 2 (N - 1) / N of
    // the buffer, so the figure compares with one GPU's links in all, whatever N is.
    const double factor = 2.0 * (count - 1) / count;
    const auto bus = [&](const cml::Stats& x) {
      return fixed(factor * static_cast<double>(n * sizeof(float)) / (x.median_ms * 1e6), 1);
    };
    const bool nccl = st.size() > 1;
    t.row({std::to_string(n * sizeof(float)), fixed(st[0].median_ms, 3), format_noise(st[0]), bus(st[0]),
           nccl ? fixed(st[1].median_ms, 3) : "-", nccl ? bus(st[1]) : "-",
           nccl ? fixed(st[1].median_ms / st[0].median_ms, 3) : "-"});
  }
  c.run.emit(t);
  return ok;
}

const std::vector<cml::Mode<Context>> kModes = {
    {"matrix", "peer bandwidth, one way and both ways, every pair, your copy_between beside it", matrix},
    {"peer-kernel", "your add_from_peer, reading the other GPU's memory, against a peer copy of the same bytes",
     peer_kernel},
    {"halo", "your run_jacobi against the same sweeps with no exchange", halo},
    {"ring", "your ring all-reduce against NCCL's, 1 MiB to --size", ring},
};

int run(int argc, char** argv) {
  Settings s;
  cml::Cli cli = cml::chapter_cli("10",
                                  "Chapter 10 - moving data between GPUs: peer access and peer copies, a kernel\n"
                                  "reading another GPU's memory, a halo exchange, a ring all-reduce against NCCL.",
                                  kModes, s.mode);
  cli.size("size", s.bytes, 4096, 1ull << 36, "bytes of each copy, and the ring's largest all-reduce")
      .integer("rows", s.rows, 1, 1 << 20, "the halo exchange's grid: inner rows")
      .integer("cols", s.cols, 3, 1 << 20, "the halo exchange's grid: columns")
      .integer("iterations", s.iterations, 1, 100000, "the halo exchange's sweeps");
  if (!cli.parse(argc, argv)) return cml::kExitOk;
  if (s.bytes % 16 != 0) throw cml::UsageError("--size: a multiple of 16 bytes");
  // Each GPU holds at most two copies' buffers, or two bands of the grid.
  const std::uint64_t grid = 2ull * (static_cast<std::uint64_t>(s.rows) + 2) * s.cols * sizeof(float);
  const cml::Run run =
      cml::open_run(cli, cml::Footprint{std::max<std::uint64_t>(3 * s.bytes, grid), "--size/--rows/--cols"});
  ch10::Team team(ch10::chapter_devices(2), s.bytes);
  if (s.rows < team.size())
    throw cml::UsageError("--rows: at least one row per GPU (" + std::to_string(team.size()) + " GPUs here)");
  const std::vector<int> devices = team.devices();
  Context c{s, run, team, ch10::enable_peer_access(devices.data(), static_cast<int>(devices.size()))};
  return cml::finish(cml::run_modes(kModes, s.mode, c));
}

}  // namespace

int main(int argc, char** argv) {
  return cml::run_program([&] { return run(argc, argv); });
}
