// Chapter 04 — global memory coalescing (CUDA C++ Best Practices Guide §9.2.1). Measures
// your copies against cudaMemcpy, sweeps the offset and the stride of a copy with the
// sector model's prediction beside each measurement, and compares records with arrays.
//
//   ./lab run 04                         everything, with your exercise.cu
//   ./lab run 04 -- --mode=offset        one part: copies | offset | stride | sizes | particles
//   ./lab run 04 -- --size=2G            a larger working set (default 512 MiB)
//   ./lab run 04 -- --dram               also the sweeps' L2 and DRAM counters, from ncu
#include "coalescing.cuh"

#include "cml/buffers.hpp"
#include "cml/cli.hpp"
#include "cml/device.hpp"
#include "cml/errors.hpp"
#include "cml/exit_codes.hpp"
#include "cml/ncu.hpp"
#include "cml/program.hpp"
#include "cml/sass.hpp"
#include "cml/sectors.hpp"
#include "cml/stream.hpp"
#include "cml/table.hpp"
#include "cml/timing.hpp"
#include "cml/verify.hpp"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <random>
#include <string>
#include <vector>

namespace {

using cml::fixed;

struct Settings {
  std::string mode = "all";
  std::size_t bytes = 512ull << 20;
  bool dram = false;
  cml::TimingOptions timing;
  bool csv = false;
  std::string out;
};

// Two device buffers of `bytes`, the input filled with a pattern that no offset or
// stride can mistake for another element.
struct Buffers {
  explicit Buffers(std::size_t bytes) : in(bytes / 4), out(bytes / 4), host(bytes / 4) {
    for (std::size_t i = 0; i < host.size(); ++i) host[i] = static_cast<float>(i % 1000003) * 0.5f + 1.0f;
    CUDA_CHECK(cudaMemcpy(in.data(), host.data(), bytes, cudaMemcpyHostToDevice));
  }
  cml::DeviceBuffer<float> in, out;
  std::vector<float> host;
};

// out[i] == in[i * stride + offset] for i < n elements of elem_bytes, checked on the host.
cml::VerifyResult check_copy(const Buffers& b, std::size_t n, std::size_t stride, std::size_t offset,
                             unsigned elem_bytes) {
  const std::size_t floats = elem_bytes / 4;
  std::vector<float> got(n * floats), want(n * floats);
  CUDA_CHECK(cudaMemcpy(got.data(), b.out.data(), got.size() * 4, cudaMemcpyDeviceToHost));
  for (std::size_t i = 0; i < n; ++i)
    for (std::size_t f = 0; f < floats; ++f) want[i * floats + f] = b.host[(i * stride + offset) * floats + f];
  return cml::compare_exact(got.data(), want.data(), got.size());
}

double time_ms(const cml::Work& w, cudaStream_t s, const Settings& st) {
  return cml::time_work(w, s, st.timing).median_ms;
}

// ---- Parts -------------------------------------------------------------------------------------

bool run_copies(const Settings& s, Buffers& b, double memcpy_gbps, double peak, cudaStream_t stream) {
  const std::size_t n = s.bytes / 4;
  std::printf("\n== Your copies of %s (read + written bytes counted) ==\n", cml::format_bytes(s.bytes).c_str());
  bool ok = true;
  cml::Table t("copies", {"copy", "ms", "GB/s", "of cudaMemcpy", "of peak"});
  const std::vector<std::pair<std::string, cml::Work>> copies = {
      {"cudaMemcpy device to device",
       [&](cudaStream_t st) { CUDA_CHECK(cudaMemcpyAsync(b.out.data(), b.in.data(), s.bytes, cudaMemcpyDeviceToDevice, st)); }},
      {"copy_coalesced (yours)", [&](cudaStream_t st) { ch04::copy_coalesced(b.in.data(), b.out.data(), n, st); }},
      {"copy_vectorized (yours)", [&](cudaStream_t st) { ch04::copy_vectorized(b.in.data(), b.out.data(), n, st); }},
  };
  for (const auto& [name, work] : copies) {
    CUDA_CHECK(cudaMemsetAsync(b.out.data(), 0, s.bytes, stream));
    work(stream);
    CUDA_CHECK(cudaStreamSynchronize(stream));
    ok &= cml::report(check_copy(b, n, 1, 0, 4), name);
    const double ms = time_ms(work, stream, s);
    const double gbps = cml::gbps(2 * s.bytes, ms);
    t.row({name, fixed(ms, 3), fixed(gbps, 0), fixed(gbps / memcpy_gbps, 3), fixed(gbps / peak, 3)});
  }
  t.emit(s.csv, s.out);
  return ok;
}

// Elements written by the sweep's copy for offset or stride k: the stride copy reads
// n * stride elements, so its output shrinks with the stride and its input always spans
// the working set; the offset copy leaves room for the largest offset (32).
std::size_t sweep_n(bool offsets, std::size_t k, std::size_t bytes) {
  return offsets ? bytes / 4 - 32 : bytes / 4 / k;
}

// The sweep's copy for offset or stride k, over sweep_n elements.
cml::Work sweep_copy(Buffers& b, bool offsets, std::size_t k, std::size_t bytes) {
  const std::size_t n = sweep_n(offsets, k, bytes);
  return [&b, offsets, k, n](cudaStream_t st) {
    if (offsets) ch04::launch_offset_copy(b.in.data(), b.out.data(), n, k, 4, st);
    else ch04::launch_stride_copy(b.in.data(), b.out.data(), n, k, 4, st);
  };
}

// Offset or stride sweep of float copies, with the model's L1 efficiency beside each.
bool run_sweep(const Settings& s, Buffers& b, double memcpy_gbps, bool offsets, cudaStream_t stream) {
  const unsigned elem = 4;
  std::printf("\n== %s copy of floats over %s, %s ==\n", offsets ? "Offset" : "Stride",
              cml::format_bytes(s.bytes).c_str(), offsets ? "offsets 0..32" : "strides 1..32 (output = input / stride)");
  bool ok = true;
  cml::Table t(offsets ? "offset" : "stride",
               {offsets ? "offset" : "stride", "ms", "GB/s", "of cudaMemcpy", "model sectors/request", "model efficiency"});
  for (std::size_t k = offsets ? 0 : 1; k <= 32; ++k) {
    const std::size_t n = sweep_n(offsets, k, s.bytes);
    const cml::Work w = sweep_copy(b, offsets, k, s.bytes);
    if (k == 0 || k == 1 || k == 2 || k == 31 || k == 32) {  // a few checked in full
      w(stream);
      CUDA_CHECK(cudaStreamSynchronize(stream));
      ok &= cml::report(check_copy(b, n, offsets ? 1 : k, offsets ? k : 0, elem),
                        std::string(offsets ? "offset " : "stride ") + std::to_string(k));
    }
    const double ms = time_ms(w, stream, s);
    // Effective bandwidth counts the bytes the program wanted: n read and n written.
    const double gbps = cml::gbps(2 * n * elem, ms);
    const double spr = offsets ? cml::sectors_per_request(0, 64, 1, k, elem) : cml::sectors_per_request(0, 64, k, 0, elem);
    const double eff = offsets ? cml::efficiency(0, 64, 1, k, elem) : cml::efficiency(0, 64, k, 0, elem);
    t.row({std::to_string(k), fixed(ms, 3), fixed(gbps, 0), fixed(gbps / memcpy_gbps, 3), fixed(spr, 2), fixed(eff, 3)});
  }
  t.emit(s.csv, s.out);
  return ok;
}

bool run_sizes(const Settings& s, Buffers& b, double memcpy_gbps, cudaStream_t stream) {
  std::printf("\n== Element sizes 4, 8, 16 bytes: aligned, offset by one element, stride 2 ==\n");
  bool ok = true;
  cml::Table t("sizes", {"element bytes", "pattern", "GB/s", "of cudaMemcpy", "model sectors/request", "model efficiency"});
  for (const unsigned elem : {4u, 8u, 16u}) {
    const std::size_t n = s.bytes / elem / 2 - 1;  // stride 2 reads twice n elements
    for (const auto& [name, stride, offset] : {std::tuple<const char*, std::size_t, std::size_t>{"aligned", 1, 0},
                                               {"offset 1", 1, 1}, {"stride 2", 2, 0}}) {
      const cml::Work w = [&, stride = stride, offset = offset](cudaStream_t st) {
        if (stride == 1) ch04::launch_offset_copy(b.in.data(), b.out.data(), n, offset, elem, st);
        else ch04::launch_stride_copy(b.in.data(), b.out.data(), n, stride, elem, st);
      };
      w(stream);
      CUDA_CHECK(cudaStreamSynchronize(stream));
      const auto r = check_copy(b, n, stride, offset, elem);
      if (!r.ok) ok &= cml::report(r, std::to_string(elem) + "-byte " + name);
      const double gbps = cml::gbps(2 * n * elem, time_ms(w, stream, s));
      t.row({std::to_string(elem), name, fixed(gbps, 0), fixed(gbps / memcpy_gbps, 3),
             fixed(cml::sectors_per_request(0, 64, stride, offset, elem), 2),
             fixed(cml::efficiency(0, 64, stride, offset, elem), 3)});
    }
  }
  t.emit(s.csv, s.out);
  return ok;
}

bool run_particles(const Settings& s, double memcpy_gbps, cudaStream_t stream) {
  const std::size_t n = s.bytes / sizeof(ch04::Particle);
  std::printf("\n== %zu particles: 64-byte records against arrays (x += vx * dt, for x, y, z) ==\n", n);
  std::vector<ch04::Particle> host(n);
  std::minstd_rand rng(4);
  for (auto& p : host) {
    p = ch04::Particle{};
    p.x = static_cast<float>(rng() % 1000);
    p.y = static_cast<float>(rng() % 1000);
    p.z = static_cast<float>(rng() % 1000);
    p.vx = static_cast<float>(rng() % 17) - 8;
    p.vy = static_cast<float>(rng() % 17) - 8;
    p.vz = static_cast<float>(rng() % 17) - 8;
  }
  cml::DeviceBuffer<ch04::Particle> aos(n);
  CUDA_CHECK(cudaMemcpy(aos.data(), host.data(), aos.bytes(), cudaMemcpyHostToDevice));
  std::vector<cml::DeviceBuffer<float>> fields;
  for (int f = 0; f < 6; ++f) fields.emplace_back(n);
  for (int f = 0; f < 6; ++f) {  // x, y, z, then vx, vy, vz
    std::vector<float> v(n);
    for (std::size_t i = 0; i < n; ++i) v[i] = f < 3 ? ch04::position(host[i], f) : ch04::velocity(host[i], f - 3);
    CUDA_CHECK(cudaMemcpy(fields[f].data(), v.data(), n * 4, cudaMemcpyHostToDevice));
  }
  const ch04::ParticlesSoA soa{fields[0].data(), fields[1].data(), fields[2].data(),
                               fields[3].data(), fields[4].data(), fields[5].data()};
  const float dt = 0.25f;  // exact in binary: the results compare exactly
  ch04::advance_aos(aos.data(), n, dt, stream);
  ch04::advance_soa(soa, n, dt, stream);
  CUDA_CHECK(cudaStreamSynchronize(stream));
  std::vector<float> want(n), got(n);
  bool ok = true;
  for (int f = 0; f < 3; ++f) {
    for (std::size_t i = 0; i < n; ++i) want[i] = ch04::position(host[i], f) + ch04::velocity(host[i], f) * dt;
    CUDA_CHECK(cudaMemcpy(got.data(), fields[f].data(), n * 4, cudaMemcpyDeviceToHost));
    ok &= cml::report(cml::compare_exact(got.data(), want.data(), n), std::string("advance_soa (yours), ") + "xyz"[f]);
  }
  const auto st = cml::time_interleaved({[&](cudaStream_t x) { ch04::advance_aos(aos.data(), n, dt, x); },
                                         [&](cudaStream_t x) { ch04::advance_soa(soa, n, dt, x); }},
                                        stream, s.timing);
  const std::size_t useful = n * (24 + 12);  // read position and velocity, write position
  cml::Table t("particles", {"layout", "ms", "useful GB/s", "of cudaMemcpy", "speed-up"});
  t.row({"records (array of structures)", fixed(st[0].median_ms, 3), fixed(cml::gbps(useful, st[0].median_ms), 0),
         fixed(cml::gbps(useful, st[0].median_ms) / memcpy_gbps, 3), "1.00"});
  t.row({"arrays (structure of arrays, yours)", fixed(st[1].median_ms, 3), fixed(cml::gbps(useful, st[1].median_ms), 0),
         fixed(cml::gbps(useful, st[1].median_ms) / memcpy_gbps, 3), fixed(st[0].median_ms / st[1].median_ms, 2)});
  t.emit(s.csv, s.out);
  return ok;
}

// Each sweep kernel launched once, in order (offsets 0..32, then strides 1..32): what
// --dram profiles under ncu.
void launch_sweep_once(const Settings& s, Buffers& b, cudaStream_t stream) {
  for (const bool offsets : {true, false})
    for (std::size_t k = offsets ? 0 : 1; k <= 32; ++k) sweep_copy(b, offsets, k, s.bytes)(stream);
  CUDA_CHECK(cudaStreamSynchronize(stream));
}

// What each sweep kernel cost beyond L1 (Nsight Compute on this program's profile-target
// mode): the L2 requests and sectors its loads made, and the bytes DRAM really moved,
// beside the bytes the copy wanted. The sector model counts L1 sectors; L2 and DRAM are
// where the time goes.
bool run_dram(const Settings& s, Buffers& b, int device, cudaStream_t stream) {
  std::printf("\n== L2 and DRAM behind the sweeps (Nsight Compute) ==\n");
  const std::vector<std::string> metrics = {"dram__bytes_read.sum", "dram__bytes_write.sum",
                                            "lts__t_requests_srcunit_tex_op_read.sum",
                                            "lts__t_sectors_srcunit_tex_op_read.sum"};
  const auto r = cml::ncu::profile({cml::sass::self_executable(), "--mode=profile-target", "--size=" + std::to_string(s.bytes),
                                    "--device=" + std::to_string(device)},
                                   "offset_copy|stride_copy", metrics, {"CML_TRACE=off"});
  if (!r.ok) {
    std::printf("(not measured: %s)\n", r.error.c_str());
    return true;
  }
  if (r.kernels.size() != 33 + 32) {
    std::printf("(ncu profiled %zu kernels, 65 expected: not shown)\n", r.kernels.size());
    return true;
  }
  cml::Table t("dram", {"pattern", "k", "ms", "model L1 sectors/request", "L2 sectors/request", "L2 requests/request",
                        "DRAM read / wanted", "model L1 moved / wanted", "DRAM GB/s (read + write)"});
  std::size_t i = 0;
  for (const bool offsets : {true, false})
    for (std::size_t k = offsets ? 0 : 1; k <= 32; ++k, ++i) {
      const std::size_t n = sweep_n(offsets, k, s.bytes);
      const double ms = time_ms(sweep_copy(b, offsets, k, s.bytes), stream, s);
      const double wanted = static_cast<double>(n) * 4, requests = static_cast<double>(n) / 32;  // one per warp
      const auto value = [&](std::size_t m) {
        const auto& v = r.kernels[i].values;
        return v.count(metrics[m]) ? v.at(metrics[m]) : 0.0;
      };
      const double spr = offsets ? cml::sectors_per_request(0, 64, 1, k, 4) : cml::sectors_per_request(0, 64, k, 0, 4);
      const double eff = offsets ? cml::efficiency(0, 64, 1, k, 4) : cml::efficiency(0, 64, k, 0, 4);
      t.row({offsets ? "offset" : "stride", std::to_string(k), fixed(ms, 3), fixed(spr, 2), fixed(value(3) / requests, 2),
             fixed(value(2) / requests, 2), fixed(value(0) / wanted, 3), fixed(1.0 / eff, 3),
             fixed(cml::gbps(static_cast<std::size_t>(value(0) + value(1)), ms), 0)});
    }
  t.emit(s.csv, s.out);
  std::printf("(requests: one per warp and load instruction; DRAM GB/s: the bytes DRAM moved over the time)\n");
  return true;
}

int run(int argc, char** argv) {
  cml::Cli cli = cml::chapter_cli("04",
               "Chapter 04 - global memory coalescing: your copies against cudaMemcpy, offset and stride\n"
               "sweeps beside the sector model, element sizes, records against arrays.");
  Settings s;
  cli.choice("mode", s.mode, {"all", "copies", "offset", "stride", "sizes", "particles", "profile-target"},
             "which part to run (profile-target: each sweep kernel once, for ncu)")
      .size("size", s.bytes, 1 << 20, 1ull << 40, "working set per buffer (far above L2, so DRAM is measured)")
      .flag("dram", s.dram, "also read the sweeps' L2 and DRAM counters with Nsight Compute (ncu)");
  if (!cli.parse(argc, argv)) return cml::kExitOk;
  s.timing = cml::TimingOptions{cli.warmup(), cli.iters()};
  s.csv = cli.csv();
  s.out = cli.out_dir();
  s.bytes = s.bytes / 1024 * 1024;

  const cml::DeviceFacts facts = cml::select_device(cli.device());
  // Two buffers of s.bytes, then the particles as records and as arrays: 3.5 x s.bytes.
  const auto needed = [](std::uint64_t bytes) { return bytes / 2 * 7; };
  if (!cli.given("size")) {
    // The default working set shrinks on a GPU with less free memory, down to 16 MiB; a
    // size asked for does not (it fits, or the command line was wrong: exit 2).
    while (needed(s.bytes) + cml::kDeviceHeadroom > facts.free_bytes && s.bytes > (16ull << 20)) s.bytes /= 2;
    if (needed(s.bytes) + cml::kDeviceHeadroom > facts.free_bytes)
      throw cml::Skip(facts.name + " has " + cml::format_bytes(facts.free_bytes) + " of device memory free; chapter 04 "
                      "needs " + cml::format_bytes(needed(s.bytes) + cml::kDeviceHeadroom) +
                      " at least (is another process using the GPU?)");
  }
  cml::require_fits_device(needed(s.bytes), facts, "--size (two buffers, the particles as records and as arrays)");
  if (s.mode != "profile-target") std::printf("%s", cml::describe(facts).c_str());
  if (!s.out.empty()) cml::device_table(facts).write_csv(s.out);
  if (s.bytes < 4 * facts.l2_bytes)
    std::printf("note: %s is less than 4x the %s L2: the figures measure L2 more than DRAM\n",
                cml::format_bytes(s.bytes).c_str(), cml::format_bytes(facts.l2_bytes).c_str());

  cml::Stream stream;
  Buffers b(s.bytes);
  if (s.mode == "profile-target") {
    launch_sweep_once(s, b, stream);
    return cml::kExitOk;
  }
  const double memcpy_ms = time_ms([&](cudaStream_t st) {
    CUDA_CHECK(cudaMemcpyAsync(b.out.data(), b.in.data(), s.bytes, cudaMemcpyDeviceToDevice, st));
  }, stream, s);
  const double memcpy_gbps = cml::gbps(2 * s.bytes, memcpy_ms);
  const double peak = facts.dram_peak_gbps();
  std::printf("cudaMemcpy device to device: %.0f GB/s (read + write) = %.3f of the %.0f GB/s peak from the "
              "device's attributes\n", memcpy_gbps, memcpy_gbps / peak, peak);
  if (!s.out.empty()) {
    cml::Table c("ceiling", {"cudaMemcpy GB/s", "peak GB/s"});
    c.row({fixed(memcpy_gbps, 1), fixed(peak, 1)});
    c.write_csv(s.out);
  }

  bool ok = true;
  const bool all = s.mode == "all";
  if (all || s.mode == "copies") ok &= run_copies(s, b, memcpy_gbps, peak, stream);
  if (all || s.mode == "offset") ok &= run_sweep(s, b, memcpy_gbps, true, stream);
  if (all || s.mode == "stride") ok &= run_sweep(s, b, memcpy_gbps, false, stream);
  if (all || s.mode == "sizes") ok &= run_sizes(s, b, memcpy_gbps, stream);
  if (all || s.mode == "particles") ok &= run_particles(s, memcpy_gbps, stream);
  if (s.dram) ok &= run_dram(s, b, cli.device(), stream);
  return cml::finish(ok);
}

}  // namespace

int main(int argc, char** argv) {
  return cml::run_program([&] { return run(argc, argv); });
}
