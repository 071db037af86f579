// Chapter 06 — what the program (main.cu) and the tests (tests/test_06_memory_spaces.cpp)
// share: the inputs and CPU references of the three steps (with the rotation's tolerance
// for the texture unit's 9-bit weights), and the reading of the compiled code: each
// kernel's resource report (cuobjdump -res-usage) and the SASS facts the steps are checked
// on. Host code only; the SASS part runs without a GPU.
#pragma once

#include "memory_spaces.cuh"

#include "cml/errors.hpp"
#include "cml/sass.hpp"
#include "cml/tools.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <map>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

namespace ch06 {

// ---- Step 1: the filter -------------------------------------------------------------------

struct Shape {
  int rows, cols;
  const char* what;
};
// Rows not a multiple of the segment, columns not a multiple of the block or of 32, fewer
// rows than taps, one column.
inline const std::vector<Shape>& fir_shapes() {
  static const std::vector<Shape> s = {{1024, 1024, "round"},        {1000, 1037, "ragged"}, {333, 129, "ragged, small"},
                                       {17, 300, "fewer rows than taps"}, {200, 1, "one column"}, {1, 77, "one row"}};
  return s;
}

inline Taps fir_taps(int seed = 0) {
  Taps t{};
  for (int k = 0; k < kTaps; ++k) t.w[k] = static_cast<float>(((k * 37 + seed * 11) % 23) - 11) / 64.0f;
  return t;
}
// Small integers / 64 in, so every partial sum is exact in float: the filter is compared exactly.
inline float fir_input(std::size_t i) { return static_cast<float>(static_cast<int>((i * 2654435761u) % 33u) - 16); }

inline std::vector<float> fir_reference(const std::vector<float>& in, int rows, int cols, const Taps& t) {
  std::vector<float> out(in.size());
  for (int r = 0; r < rows; ++r)
    for (int c = 0; c < cols; ++c) {
      double acc = 0;
      for (int k = 0; k < kTaps && k <= r; ++k) acc += double(t.w[k]) * in[static_cast<std::size_t>(r - k) * cols + c];
      out[static_cast<std::size_t>(r) * cols + c] = static_cast<float>(acc);
    }
  return out;
}

// ---- Step 2: the mix ----------------------------------------------------------------------

inline std::vector<float> mix_matrix(int seed = 0) {
  std::vector<float> m(kChannels * kChannels);
  for (int i = 0; i < kChannels * kChannels; ++i) m[i] = static_cast<float>(((i * 29 + seed * 7) % 31) - 15) / 32.0f;
  return m;
}
inline float mix_input(std::size_t i) { return static_cast<float>(static_cast<int>((i * 40503u) % 61u) - 30); }
// Exact too: products of small integers / 32, sums well under 2^24 / 32.
inline std::vector<float> mix_reference(const std::vector<float>& in, const std::vector<float>& m, int n) {
  std::vector<float> out(in.size());
  for (int r = 0; r < kChannels; ++r)
    for (int p = 0; p < n; ++p) {
      double acc = 0;
      for (int c = 0; c < kChannels; ++c) acc += double(m[r * kChannels + c]) * in[static_cast<std::size_t>(c) * n + p];
      out[static_cast<std::size_t>(r) * n + p] = static_cast<float>(acc);
    }
  return out;
}
inline const std::vector<int>& mix_sizes() {
  static const std::vector<int> s = {1 << 16, 100003, 1000, 33, 1};
  return s;
}

// ---- Step 3: the rotation ------------------------------------------------------------------

// Smooth waves plus a fine pattern, every value in [0.35, 1]: no pixel is 0, so a read
// outside the image that is not 0 (clamp) shows at every edge, and neighbours differ, so
// nearest-pixel sampling or a half-pixel shift shows everywhere.
inline float image_value(int x, int y) {
  return 0.6f + 0.25f * std::sin(0.07f * x) * std::cos(0.05f * y) + 0.15f * static_cast<float>((x * 7 + y * 13) % 17) / 17.0f;
}

// The texture unit blends with weights in 9-bit fixed point, 8 of its bits fractional
// (CUDA Programming Guide, "Linear Filtering"): each weight may be off by up to 1/256 from
// the exact fraction (and the coordinates, computed in float on both sides, add about
// 1/1024 more at our sizes). With a' = a + ea, b' = b + eb, the bilinear value moves by
//   ea * [(1-b)(T10 - T00) + b(T11 - T01)] + eb * [(1-a)(T01 - T00) + a(T11 - T10)] + ea eb (T00 - T10 - T01 + T11),
// so a pixel may differ from the exact value by at most
//   e (max|T10 - T00|, |T11 - T01|) + e (max|T01 - T00|, |T11 - T10|) + e^2 |T00 - T10 - T01 + T11|,
// e = 1/256 + 1/1024, plus float rounding (1e-5 of the largest value). Tight: nearest-pixel
// sampling misses by a |T10 - T00| (a up to 1/2), a half-pixel shift by half a neighbour's
// difference, clamping by a whole edge value.
inline constexpr double kWeightError = 1.0 / 256 + 1.0 / 1024;

struct Rotation {
  std::vector<float> want, tolerance;
};
inline Rotation rotation_reference(const std::vector<float>& img, int w, int h, float angle) {
  float cs = 0, sn = 0;
  rotation_cos_sin(angle, cs, sn);
  const auto at = [&](long i, long j) -> double {
    return (i < 0 || j < 0 || i >= w || j >= h) ? 0.0 : img[static_cast<std::size_t>(j) * w + i];
  };
  Rotation r;
  r.want.resize(static_cast<std::size_t>(w) * h);
  r.tolerance.resize(r.want.size());
  for (int y = 0; y < h; ++y)
    for (int x = 0; x < w; ++x) {
      const double dx = x + 0.5 - 0.5 * w, dy = y + 0.5 - 0.5 * h;
      const double sx = cs * dx + sn * dy + 0.5 * w - 0.5, sy = -sn * dx + cs * dy + 0.5 * h - 0.5;
      const double fx = std::floor(sx), fy = std::floor(sy), a = sx - fx, b = sy - fy;
      const long i = static_cast<long>(fx), j = static_cast<long>(fy);
      const double t00 = at(i, j), t10 = at(i + 1, j), t01 = at(i, j + 1), t11 = at(i + 1, j + 1);
      const std::size_t o = static_cast<std::size_t>(y) * w + x;
      r.want[o] = static_cast<float>((1 - b) * ((1 - a) * t00 + a * t10) + b * ((1 - a) * t01 + a * t11));
      const double e = kWeightError;
      r.tolerance[o] = static_cast<float>(e * std::max(std::abs(t10 - t00), std::abs(t11 - t01)) +
                                          e * std::max(std::abs(t01 - t00), std::abs(t11 - t10)) +
                                          e * e * std::abs(t00 - t10 - t01 + t11) + 1e-5);
    }
  return r;
}

struct RotationCase {
  int width, height;
  float angle;
  const char* what;
};
inline const std::vector<RotationCase>& rotation_cases() {
  static const std::vector<RotationCase> c = {
      {256, 256, 0.0f, "no rotation"},       {333, 257, 0.5235988f, "30 degrees, ragged"},
      {640, 480, 1.0f, "1 radian"},          {97, 203, 3.1415927f, "half a turn"},
      {1, 1, 0.3f, "one pixel"},             {500, 31, -0.2f, "thin, -0.2 radian"},
  };
  return c;
}

// First pixel outside its tolerance: "" when all agree.
inline std::string rotation_mismatch(const std::vector<float>& got, const Rotation& ref, int w) {
  std::size_t bad = 0, first = got.size();
  double worst = 0;
  for (std::size_t i = 0; i < got.size(); ++i) {
    const double d = std::abs(double(got[i]) - ref.want[i]);
    if (!(d <= ref.tolerance[i])) {
      if (first == got.size()) first = i;
      ++bad;
      worst = std::max(worst, std::isfinite(d) ? d : 1e30);
    }
  }
  if (bad == 0) return "";
  std::ostringstream s;
  s << bad << " of " << got.size() << " pixels outside the tolerance; first at (x " << first % w << ", y " << first / w
    << "): got " << got[first] << ", want " << ref.want[first] << " +- " << ref.tolerance[first] << "; worst miss "
    << worst;
  return s.str();
}

// ---- The compiled code ------------------------------------------------------------------------

// A kernel's line of cuobjdump -res-usage: REG:47 STACK:0 SHARED:0 LOCAL:0 ...
struct Resources {
  int regs = -1, stack = -1, shared = -1, local = -1;
};

// One kernel's SASS as text lines, plus what the steps look for in it.
struct KernelCode {
  std::string mangled;
  std::vector<std::string> lines;  // instructions, "LDC.64 R12, c[0x3][R24+0x8] ;"
  Resources res;

  std::size_t count_opcode(const std::string& prefix) const {
    std::size_t n = 0;
    for (const auto& l : lines) n += l.rfind(prefix, 0) == 0 ? 1 : 0;
    return n;
  }
  std::size_t local_accesses() const { return count_opcode("LDL") + count_opcode("STL"); }
  // Reads of the user constant bank at an immediate offset: one address for the warp.
  std::size_t constant_uniform() const { return count_matching(R"(c\[0x3\]\[(0x[0-9a-f]+|UR[0-9]+[^\]]*)\])"); }
  // Reads of the user constant bank indexed by a per-thread register: one address per lane.
  std::size_t constant_divergent() const { return count_matching(R"(c\[0x3\]\[R[0-9]+)"); }
  std::size_t texture_fetches() const { return count_opcode("TEX") + count_opcode("TLD") + count_opcode("TLD4"); }
  std::size_t global_loads() const { return count_opcode("LDG"); }
  std::string first_matching(const std::string& re) const {
    const std::regex r(re);
    for (const auto& l : lines)
      if (std::regex_search(l, r)) return l;
    return "";
  }

 private:
  std::size_t count_matching(const std::string& re) const {
    const std::regex r(re);
    std::size_t n = 0;
    for (const auto& l : lines) n += std::regex_search(l, r) ? 1 : 0;
    return n;
  }
};

inline std::string cuobjdump_text(const std::string& binary, const std::string& what) {
  const auto tool = cml::sass::find_cuobjdump();
  if (!tool)
    throw cml::Skip("cuobjdump with nvdisasm not found (CUDA's bin folder, or pip install nvidia-cuda-cuobjdump "
                    "nvidia-cuda-nvdisasm into .venv): the compiled code cannot be read");
  const std::string dir = std::filesystem::path(*tool).parent_path().string();
  const auto out = cml::tools::run("PATH=" + cml::tools::quote(dir) + ":\"$PATH\" " + cml::tools::quote(*tool) + " " +
                                   what + " " + cml::tools::quote(binary) + " 2>&1");
  if (out.status != 0) throw cml::Skip(*tool + " " + what + " failed: " + out.text.substr(0, 300));
  return out.text;
}

// Every kernel of `binary` (first cubin of each name: the build targets one architecture
// first), with its SASS lines and resources. Pure text work after cuobjdump.
inline std::map<std::string, KernelCode> parse_code(const std::string& sass, const std::string& res_usage) {
  std::map<std::string, KernelCode> code;
  std::istringstream in(sass);
  std::string line;
  KernelCode* cur = nullptr;
  const std::regex fn(R"(Function : (\S+))"), ins(R"(/\*[0-9a-f]{4,}\*/\s+(.*?)\s*;)");
  std::smatch m;
  while (std::getline(in, line)) {
    if (std::regex_search(line, m, fn)) {
      const std::string name = m[1];
      cur = code.count(name) ? nullptr : &code[name];
      if (cur) cur->mangled = name;
    } else if (cur && std::regex_search(line, m, ins)) {
      std::string text = m[1];
      // Drop a predicate guard (@P0, @!PT): the opcode comes first.
      if (!text.empty() && text[0] == '@') text = text.substr(std::min(text.size(), text.find(' ') + 1));
      cur->lines.push_back(text);
    }
  }
  std::istringstream ru(res_usage);
  const std::regex rfn(R"(Function (\S+):)"), rline(R"(REG:(\d+) STACK:(\d+) SHARED:(\d+) LOCAL:(\d+))");
  std::string current;
  std::map<std::string, bool> seen;
  while (std::getline(ru, line)) {
    if (std::regex_search(line, m, rfn)) current = m[1];
    else if (!current.empty() && std::regex_search(line, m, rline) && code.count(current) && !seen[current]) {
      seen[current] = true;
      code[current].res = {std::stoi(m[1]), std::stoi(m[2]), std::stoi(m[3]), std::stoi(m[4])};
    }
  }
  return code;
}

inline std::map<std::string, KernelCode> read_code(const std::string& binary) {
  return parse_code(cuobjdump_text(binary, "-sass"), cuobjdump_text(binary, "-res-usage"));
}

// The kernel whose mangled name holds `name` (ch06::name: "4ch06" + length + name).
inline const KernelCode* find_kernel(const std::map<std::string, KernelCode>& code, const std::string& name) {
  const std::string key = "4ch06" + std::to_string(name.size()) + name;
  for (const auto& [mangled, k] : code)
    if (mangled.find(key) != std::string::npos) return &k;
  return nullptr;
}

// The steps' checks on the compiled code: "" when the kernel shows the mechanism, else what
// is wrong and where to look. The tests and --mode=mechanism say the same words.
inline std::string step1_code_error(const KernelCode* k) {
  if (!k) return "no kernel fir_registers_kernel in the compiled code: keep the kernel's name";
  std::ostringstream s;
  if (k->res.stack != 0 || k->res.local != 0)
    s << "fir_registers_kernel has a " << k->res.stack << "-byte stack frame (local memory): an array indexed by a "
      << "value known only at run time (window[r % kTaps]) cannot live in registers — make every index a constant "
      << "after unrolling (step 1). ";
  if (k->local_accesses() > 0)
    s << "its SASS has " << k->count_opcode("LDL") << " LDL and " << k->count_opcode("STL")
      << " STL (local loads and stores), e.g. \"" << k->first_matching(R"(^(LDL|STL))") << "\" (step 1). ";
  if (k->res.shared > 0)
    s << "it uses " << k->res.shared << " bytes of shared memory: the window belongs in registers, not in shared "
      << "memory or a shared-memory spill (step 1). ";
  return s.str();
}

inline std::string step2_code_error(const KernelCode* k) {
  if (!k) return "no kernel mix_constant_kernel in the compiled code: keep the kernel's name";
  std::ostringstream s;
  if (k->constant_divergent() > 0)
    s << "mix_constant_kernel reads constant memory at an address held in a per-thread register ("
      << k->constant_divergent() << " times, e.g. \"" << k->first_matching(R"(c\[0x3\]\[R[0-9]+)")
      << "\"): the lanes of a warp ask for different words of M, and the constant cache serves them one at a "
      << "time — make the index of M the same for every lane (step 2). ";
  else if (k->constant_uniform() == 0)
    s << "mix_constant_kernel never reads the user constant bank c[0x3] (every kernel reads its parameters from "
      << "c[0x0], which does not count): M must be read from c_mix (step 2). ";
  return s.str();
}

inline std::string step3_code_error(const KernelCode* k) {
  if (!k) return "no kernel rotate_texture_kernel in the compiled code: keep the kernel's name";
  std::ostringstream s;
  if (k->texture_fetches() == 0)
    s << "rotate_texture_kernel has no texture instruction (TEX/TLD): it must read the image with tex2D<float> "
      << "through the texture object (step 3). ";
  if (k->global_loads() > 0)
    s << "it still loads from global memory " << k->global_loads() << " time(s) (e.g. \""
      << k->first_matching(R"(^LDG)") << "\"): every value must come through the texture (step 3). ";
  return s.str();
}

}  // namespace ch06
