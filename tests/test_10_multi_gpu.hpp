// Chapter 10's test helpers (tests/test_10_multi_gpu.cpp includes this, and nothing else
// does): the GPUs of a case with peer access as the learner enabled it, float arrays filled
// with a pattern, what a trace says about copies between devices, and the checks shared by
// several steps. The cases and the speed bars are in the .cpp.
#pragma once

#include "api_calls.hpp"
#include "enqueue_only.hpp"
#include "gpu.hpp"
#include "harness.hpp"
#include "integrity.hpp"
#include "kernel_sass.hpp"
#include "multi_gpu.cuh"
#include "speed_bar.hpp"

#include "cml/api_trace.hpp"
#include "cml/errors.hpp"
#include "cml/timing.hpp"
#include "cml/trace.hpp"

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

namespace {

using cml::trace::CopyKind;
using cml::trace::CopyRecord;

// Every GPU of the machine (the test main skips the chapter below two), their streams and
// events, and peer access as the learner's enable_peer_access left it.
struct Machine {
  std::vector<int> devices = ch10::chapter_devices(2);
  ch10::Team team{devices, std::size_t{64} << 20};
  ch10::PeerMatrix peers = ch10::enable_peer_access(devices.data(), static_cast<int>(devices.size()));
  // The matrix with nothing enabled: what a copy between GPUs that cannot reach each other sees.
  ch10::PeerMatrix none() const {
    ch10::PeerMatrix m = peers;
    for (auto& row : m.enabled) std::fill(std::begin(row), std::end(row), false);
    return m;
  }
  std::vector<cml::test::DeviceStream> streams() const {
    std::vector<cml::test::DeviceStream> out;
    for (int i = 0; i < team.size(); ++i) {
      out.push_back({team[i].device, team[i].compute});
      out.push_back({team[i].device, team[i].edges});
    }
    return out;
  }
};

// Steps 2-4 read the other GPU's memory: where the hardware does not let `a` reach `b`, the
// case skips and says so; where it does and the learner's step 1 did not enable it, it fails
// naming step 1 (a kernel that read without it would fault, and end every later case).
#define CML_REQUIRE_PEER(m, a, b)                                                                             \
  do {                                                                                                        \
    if (!ch10::peer_capability((m).devices).reaches((a), (b)))                                                \
      CML_SKIP("device " + std::to_string(a) + " cannot reach device " + std::to_string(b) +                  \
               "'s memory on this machine (cudaDeviceCanAccessPeer): this step needs peer access");           \
    INFO("enable_peer_access did not enable " << (a) << " -> " << (b) << ": a kernel of one GPU can use the " \
                                              << "other's memory only with peer access (step 1 first; "       \
                                              << "./lab hint 10)");                                           \
    REQUIRE((m).peers.reaches((a), (b)));                                                                     \
  } while (0)

// The i-th float of pattern `seed`: every value distinct within a buffer, exact as a float.
inline float pattern(unsigned seed, std::size_t i) {
  return static_cast<float>((i * 2654435761u + seed * 97u) % 1000003u);
}
inline std::vector<float> pattern_vector(unsigned seed, std::size_t n) {
  std::vector<float> v(n);
  for (std::size_t i = 0; i < n; ++i) v[i] = pattern(seed, i);
  return v;
}

// The first index where `got` differs from `want` over [0, n), or n.
inline std::size_t first_difference(const std::vector<float>& got, const std::vector<float>& want, std::size_t n) {
  for (std::size_t i = 0; i < n; ++i)
    if (got[i] != want[i]) return i;
  return n;
}

// Copies between two devices in a trace (PtoP, or DtoD records whose two ends differ).
inline std::vector<CopyRecord> cross_device_copies(const cml::trace::Trace& t) {
  std::vector<CopyRecord> out;
  for (const auto& c : t.copies)
    if (c.kind == CopyKind::PtoP || (c.kind == CopyKind::DtoD && c.src_device != c.dst_device)) out.push_back(c);
  return out;
}

// Copies through the host in a trace: device to host or host to device.
inline std::size_t host_copies(const cml::trace::Trace& t) {
  return t.copies_of(CopyKind::DtoH).size() + t.copies_of(CopyKind::HtoD).size();
}

// "device 0: 3 kernels on streams 13, 14": where a trace's kernels ran, for a message.
inline std::string where_kernels_ran(const cml::trace::Trace& t) {
  std::string out;
  for (const auto& k : t.kernels)
    out += (out.empty() ? "" : "; ") + k.name.substr(0, k.name.find('(')) + " on device " +
           std::to_string(k.device_id) + ", stream " + std::to_string(k.stream_id);
  return out.empty() ? "no kernel" : out;
}

// Step 3's first failure when a grid comes out wrong: which band and row, in the grid's rows.
inline std::string grid_error(const std::vector<float>& got, const std::vector<float>& want, int rows, int cols,
                              int count) {
  const std::size_t i = first_difference(got, want, want.size());
  if (i == want.size()) return "";
  const int row = static_cast<int>(i / static_cast<std::size_t>(cols));
  const std::vector<int> split = ch10::split_rows(rows, count);
  int band = 0, first = 1;
  while (band + 1 < count && row >= first + split[static_cast<std::size_t>(band)])
    first += split[static_cast<std::size_t>(band++)];
  const bool edge = row == first || row == first + split[static_cast<std::size_t>(band)] - 1;
  return "grid row " + std::to_string(row) + " (band " + std::to_string(band) + "'s " +
         (edge ? "edge row: it reads a halo" : "inner row") + "), column " + std::to_string(i % cols) + ": " +
         std::to_string(got[i]) + ", want " + std::to_string(want[i]);
}

}  // namespace
