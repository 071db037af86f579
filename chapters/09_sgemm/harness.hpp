// Chapter 09 — what the program (main.cu, program/) and the tests (tests/test_09_sgemm.cpp)
// share: the shapes, padded and poisoned matrices on the host and the device, the CPU
// reference (every element for small shapes, a sample for big ones), the error bound, the
// comparison that says what is wrong in a learner's terms, the steps as a table, and the
// counts behind GFLOP/s and the roofline. Host code only; the bulky parts are in harness.cu.
//
// The poison, so that a mistake shows by itself:
//   - A's and B's pad columns (cols .. ld - 1) and the rows past their ends hold a NaN
//     (kInputPoison): a kernel that loads outside the matrix and adds what it got makes NaN;
//   - C, its pad columns and the rows past its end hold 0xFFFFFFFF before every run
//     (kOutputPoison), a NaN no arithmetic makes (the GPU's NaN is 0x7FFFFFFF): an element
//     still holding it was never written, a pad or guard element not holding it was written.
#pragma once

#include "sgemm.cuh"

#include "cml/buffers.hpp"

#include <cuda_runtime_api.h>

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

namespace ch09 {

// ---- Shapes ----------------------------------------------------------------------------

// C = A B with A m x k, B k x n, C m x n; or, with `gram`, C = A Aᵀ with A m x k and C
// m x m (then n == m and there is no B). extra_ld: floats added to every leading dimension
// beyond round_up(cols, 4) (a multiple of 4), so that a kernel using cols for ld shows even
// where cols is a multiple of 4.
struct Shape {
  int m = 0, n = 0, k = 0;
  bool gram = false;
  const char* what = "";
  int extra_ld = 0;
};

inline Shape gemm_shape(int m, int n, int k, const char* what = "", int extra_ld = 0) {
  return Shape{m, n, k, false, what, extra_ld};
}
inline Shape gram_shape(int m, int k, const char* what = "", int extra_ld = 0) {
  return Shape{m, m, k, true, what, extra_ld};
}

// "300 x 200 x 100 (ragged)" or "Gram 300 x 300 from A 300 x 100 (ragged)".
std::string describe(const Shape& s);

inline int round_up(int x, int to) { return (x + to - 1) / to * to; }
// The leading dimension the chapter gives a matrix of `cols` columns: every row starts on 16
// bytes, what 16-byte loads, cp.async and TMA need.
inline int padded_ld(int cols, int extra = 0) { return round_up(cols, 4) + extra; }

// The shapes every step is checked on: whole tiles first (a failure only the others show
// is at the edges or in the K tail), then ragged edges with whole k-tiles, a K tail with
// whole edges, both, non-square both ways, k = 1, one row, one column, one element,
// k = 0 (C must become zeros), m = 0 and n = 0 (nothing to do), and a leading dimension
// wider than the pad. The largest is 513 x 517 x 519: the CPU checks every element.
const std::vector<Shape>& gemm_shapes();
// The same for step 2's Gram matrix (C = A Aᵀ, m x m).
const std::vector<Shape>& gram_shapes();
// What --mode=shapes times (./lab bench 09): square 4096³ and 8192³, and a ragged shape.
const std::vector<Shape>& bench_shapes();

// ---- Counting: FLOPs, compulsory DRAM bytes, arithmetic intensity -----------------------

// 2 m n k floating-point operations (a multiply and an add per term); the Gram matrix's
// 2 m m k (all of C, as cuBLAS computes it, not the half a symmetric kernel would).
inline double flops(const Shape& s) { return 2.0 * s.m * s.n * s.k; }
// The compulsory DRAM traffic: A and B read once, C written once, 4 bytes an element (the
// Gram matrix reads A once for both operands). A kernel that re-reads tiles from DRAM moves
// more; none can move less.
inline double dram_bytes(const Shape& s) {
  const double m = s.m, n = s.n, k = s.k;
  return 4.0 * (m * k + (s.gram ? 0.0 : k * n) + m * n);
}
// FLOP per compulsory DRAM byte: where the shape lies on the roofline.
inline double intensity(const Shape& s) { return dram_bytes(s) > 0 ? flops(s) / dram_bytes(s) : 0.0; }
// GFLOP/s (10^9 FLOP per second) for one run of `ms` milliseconds.
inline double gflops(const Shape& s, double ms) { return ms > 0 ? flops(s) / (ms * 1e6) : 0.0; }

// ---- The error bound ---------------------------------------------------------------------
//
// Every function sums k products in FP32 with fused multiply-adds, in any order. Each FMA
// rounds once (relative error at most u = 2^-24, round to nearest), and in any order of
// summation (a chain, a tree of partial sums, split k-tiles) a term passes through at most
// k roundings, so (Higham, "Accuracy and Stability of Numerical Algorithms", §3.1 and §4.2):
//     |c - exact| <= gamma_k * sum_p |a_ip| |b_pj|,   gamma_k = k u / (1 - k u).
// tolerance(k) allows k + 2 roundings (an epilogue such as cuBLAS's alpha * acc + beta * C
// may add two), doubled as a safety factor: 2 (k + 2) 2^-24. For k <= 16384, 1 / (1 - k u)
// < 1.001, so the factor 2 covers gamma_k's denominator with room to spare. The bound is a
// worst case: a term left out or counted twice moves c by about |a_ip b_pj| (1/4 on average
// for inputs in [-1, 1)), above the bound while k is below a few hundred, which is why the
// checked shapes keep k moderate. The reference is exact enough to ignore: the inputs are
// multiples of 2^-23, so each product is exact in double and the sum's error is ~2^-53.
inline double tolerance(int k) { return 2.0 * (k + 2.0) * std::ldexp(1.0, -24); }
// Below this, any difference is accepted (only where the magnitude itself is ~0: k = 0).
inline constexpr double kAbsoluteFloor = 1e-30;
// The bound for an element whose terms have magnitude `mag` (sum of |a_ip| |b_pj|).
// `scale`: 2 when the reference is cuBLAS (its result carries the same rounding).
inline double error_bound(int k, double mag, double scale = 1.0) { return scale * tolerance(k) * mag + kAbsoluteFloor; }

// ---- Matrices on the host and the device --------------------------------------------------

inline constexpr std::uint32_t kInputPoison = 0x7FC0FFEEu;   // A's and B's pads and guards: a NaN
inline constexpr std::uint32_t kOutputPoison = 0xFFFFFFFFu;  // C before a run: a NaN no arithmetic makes

inline float from_bits(std::uint32_t bits) {
  float f;
  std::memcpy(&f, &bits, sizeof f);
  return f;
}
inline std::uint32_t bits_of(float f) {
  std::uint32_t b;
  std::memcpy(&b, &f, sizeof b);
  return b;
}

// Rows that follow a matrix in its allocation, poisoned like its pads: a tile that reads or
// writes past the last row lands there (at least kGuardFloats floats).
inline constexpr int kGuardRows = 64;
inline constexpr std::size_t kGuardFloats = 1024;
inline std::size_t guard_floats(int ld) {
  const std::size_t rows = static_cast<std::size_t>(kGuardRows) * static_cast<std::size_t>(ld);
  return rows > kGuardFloats ? rows : kGuardFloats;
}

// A row-major matrix with its leading dimension, as the device holds it: rows * ld floats,
// the pad columns included.
struct HostMatrix {
  int rows = 0, cols = 0, ld = 0;
  std::vector<float> data;
  float at(int r, int c) const { return data[static_cast<std::size_t>(r) * ld + c]; }
};

// Element (r, c) of the input `seed`, in [-1, 1) and a multiple of 2^-23 (exact in FP32,
// products exact in double), the same whatever the leading dimension.
float input_value(std::uint64_t seed, int r, int c);
// A rows x cols input with ld = padded_ld(cols, extra_ld): values input_value(seed, r, c),
// pad columns kInputPoison.
HostMatrix random_matrix(int rows, int cols, std::uint64_t seed, int extra_ld = 0);

// A matrix in device memory followed by its guard rows: a View over the matrix.
class DeviceMatrix {
 public:
  DeviceMatrix(int rows, int cols, int ld);
  // Uploads `h` (same rows, cols, ld) and poisons the guard with kInputPoison; waits.
  void upload(const HostMatrix& h);
  // Fills the matrix, its pads and its guard with kOutputPoison bytes, on `stream`.
  void poison(cudaStream_t stream) const;
  View view() const { return View{buffer_.data(), rows_, cols_, ld_}; }
  // Everything after `stream`'s work: the matrix (with pads) and the guard.
  void read(HostMatrix& matrix, std::vector<float>& guard, cudaStream_t stream) const;
  // Bytes a matrix of this size takes with its guard.
  static std::uint64_t bytes(int rows, int ld);

 private:
  int rows_, cols_, ld_;
  std::size_t guard_;
  cml::DeviceBuffer<float> buffer_;
};

// What a run left in C: the matrix with its pads, and the guard after it.
struct Output {
  HostMatrix c;
  std::vector<float> guard;
};

// One problem, ready to run: the inputs on the host (for the references) and the device
// (pads and guards poisoned), and C on the device.
class Problem {
 public:
  explicit Problem(const Shape& shape, std::uint64_t seed = 1);
  const Shape& shape() const { return shape_; }
  const HostMatrix& a() const { return a_; }
  const HostMatrix& b() const { return b_; }  // 0 x 0 for a Gram shape
  ConstView a_view() const { return a_dev_.view(); }
  ConstView b_view() const { return b_dev_.view(); }
  View c_view() const { return c_dev_.view(); }
  // b(p, j) of the product: B's element, or A's (j, p) for the Gram matrix.
  float b_at(int p, int j) const { return shape_.gram ? a_.at(j, p) : b_.at(p, j); }
  // C, its pads and its guard set to kOutputPoison, on `stream`.
  void poison_c(cudaStream_t stream) const { c_dev_.poison(stream); }
  // C after `stream`'s work.
  Output read_c(cudaStream_t stream) const;
  // The device memory a Problem of this shape allocates.
  static std::uint64_t device_bytes(const Shape& shape);

 private:
  Shape shape_;
  HostMatrix a_, b_;
  DeviceMatrix a_dev_, b_dev_, c_dev_;
};

// ---- References ----------------------------------------------------------------------------

// One element a check compares: where, what it should be, and the magnitude of its terms.
struct Element {
  int row = 0, col = 0;
  double want = 0, mag = 0;
};

// What a result is compared with: `count` elements, the i-th from at(i).
struct Reference {
  std::string source;  // "the CPU" or "cuBLAS", for the messages
  double scale = 1.0;  // error_bound's scale: 2 against cuBLAS
  bool every = false;  // every element of C (else a sample)
  std::size_t count = 0;
  std::function<Element(std::size_t)> at;
};

// Every element in double (m n k multiply-adds: small shapes).
Reference cpu_reference_full(const Problem& p);
// `samples` elements in double: the four corners, the last row and the last column at a
// few places, the rows and columns around the tile boundaries of 16 .. 256, the rest spread
// deterministically.
Reference cpu_reference_sampled(const Problem& p, int samples = 300);
// Full when m n k <= kFullReferenceWork, else sampled.
inline constexpr double kFullReferenceWork = 1u << 28;
Reference cpu_reference(const Problem& p);
// Every element against a result of cuBLAS (`c_ref`, read back from the same problem):
// the magnitude is bounded by Cauchy-Schwarz, sum |a_ip||b_pj| <= |a_i| |b_j| (row i of A,
// column j of B), which costs O(mk + kn) instead of O(mnk); scale 2. `c_ref` must outlive
// the Reference.
Reference cublas_reference(const Problem& p, const HostMatrix& c_ref);

// ---- The comparison --------------------------------------------------------------------------

// What is wrong, first found first, in this order.
enum class Fault {
  none,
  past_end,     // written past C's last row (into the guard)
  pad_written,  // a pad column of C (n .. ld - 1) written
  unwritten,    // elements still holding the poison
  nan,          // NaN where a number belongs
  ragged_edge,  // wrong only in the last partial tile rows or columns
  k_tail,       // wrong by exactly the last k mod T terms
  everywhere,   // most elements wrong
  some,         // some elements wrong, not in a pattern above
};

struct Report {
  bool ok = true;
  Fault kind = Fault::none;
  std::string what;         // in the learner's terms; "" when ok
  std::size_t wrong = 0;    // elements of C wrong (never written, NaN or off by more than the bound)
  std::size_t checked = 0;  // elements compared with the reference
  int row = -1, col = -1;   // the first wrong element (row-major order of the check)
  double got = 0, want = 0, bound = 0;
  // "PASSED", or "FAILED: <what>".
  std::string describe() const;
};

// Compares the output of one run with a reference: scans all of C for the poison and for
// NaN, its pad columns and guard for writes, then the reference's elements for values
// within error_bound, and names the first problem in learner terms.
Report compare(const Problem& p, const Output& got, const Reference& ref);

// The edge tiles a report checks for: sides 4 .. 256.
inline const std::vector<int>& tile_sides() {
  static const std::vector<int> t = {4, 8, 16, 32, 64, 128, 256};
  return t;
}

// Across the checked shapes of one function: what the failing ones have in common that the
// passing ones lack ("fails only where k is not a multiple of 32: ..."); "" when nothing
// stands out.
struct ShapeVerdict {
  Shape shape;
  bool ok = true;
};
std::string failure_pattern(const std::vector<ShapeVerdict>& verdicts);

// ---- The steps ----------------------------------------------------------------------------

using GemmFn = void (*)(ConstView, ConstView, View, cudaStream_t);
using GramFn = void (*)(ConstView, View, cudaStream_t);

// One function of the chapter: the learner's steps 1-6 and the provided naive kernel
// (step 0). Program and tests iterate this list.
struct Variant {
  const char* name;    // the function, as sgemm.cuh names it
  const char* kernel;  // its kernel, as the tests find it in SASS and ncu
  int step;            // 0: provided (what it needs of the GPU: needs.txt, by step)
  const char* what;    // a few words for tables
  GemmFn gemm;         // C = A B (nullptr for the Gram step)
  GramFn gram;         // C = A Aᵀ (nullptr for the others)
  bool is_gram() const { return gram != nullptr; }
  // "sgemm_tiled (step 1)" or "sgemm_naive (provided)".
  std::string label() const;
};
const std::vector<Variant>& variants();

// Runs `v` on `p` (a Gram step on a Gram shape, the others on a product), on `stream`.
// Throws std::invalid_argument for a Gram step on a product's shape or the reverse.
void run(const Variant& v, const Problem& p, cudaStream_t stream);
// The cuBLAS ceiling on the same problem (with b_transposed and A for both operands on a
// Gram shape).
void run_cublas(Cublas& cublas, const Problem& p, cudaStream_t stream);

// cuBLAS's result of `p` (C poisoned first, read back after `stream`'s work) and that result
// against the CPU at a sample of elements: what large problems' results are compared with,
// through cublas_reference, where a full CPU reference would take minutes.
struct CublasResult {
  Output c;
  Report against_cpu;
};
CublasResult checked_cublas(Cublas& cublas, const Problem& p, cudaStream_t stream);

// Poisons C, scrubs shared memory, runs `enqueue` on `stream`, reads C back and compares it with `ref`.
Report run_and_compare(const Problem& p, const std::function<void(cudaStream_t)>& enqueue, const Reference& ref,
                       cudaStream_t stream);

// ---- The roofline's ceilings and the checks' scrub (provided.cu) ---------------------------

// fma_peak_kernel: kFmaThreads threads a block, each running kFmaChains independent chains
// of FFMA (x = x * mul + add), kFmaUnroll steps per chain per iteration: enough independent
// work to keep every FP32 lane busy, its result written so nothing is optimised away.
inline constexpr int kFmaThreads = 256, kFmaChains = 8, kFmaUnroll = 16;
inline double fma_peak_flops(int blocks, int iterations) {
  return 2.0 * kFmaChains * kFmaUnroll * static_cast<double>(iterations) * kFmaThreads * blocks;
}
// Launches it on `stream`: `out` holds blocks * kFmaThreads floats. Returns its FLOPs.
double fma_peak(float* out, int blocks, int iterations, cudaStream_t stream);
// cudaMemcpyAsync device to device of `count` floats: the HBM line of the roofline (each
// byte read once and written once).
void device_copy(const float* in, float* out, std::size_t count, cudaStream_t stream);
// The L2 line of the roofline: `blocks` blocks of kReadThreads threads read the `count`
// floats at `in` (a buffer the L2 holds: a quarter of its size) `passes` times with 16-byte
// loads, each block a slice, and write one sum per thread to `out` (blocks x kReadThreads).
// Returns the bytes read. Timed after one pass has brought the buffer into L2.
inline constexpr int kReadThreads = 256;
double l2_read(const float* in, std::size_t count, int passes, float* out, int blocks, cudaStream_t stream);
// The shared-memory line: `blocks` blocks of kReadThreads threads each read a 16 KiB tile of
// shared memory `iterations` x kSharedUnroll times with conflict-free 16-byte loads (a warp
// reads 512 consecutive bytes: 4 wavefronts) and write one sum per thread to `out`. Returns
// the bytes read.
inline constexpr int kSharedUnroll = 16;
double shared_read(int blocks, int iterations, float* out, cudaStream_t stream);
// Fills the shared memory of every SM with kInputPoison (NaN), on `stream`: a kernel that
// reads a tile before it was filled then adds NaN, instead of the last run's right values.
void scrub_shared_memory(cudaStream_t stream);

}  // namespace ch09
