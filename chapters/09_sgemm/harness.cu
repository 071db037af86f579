// Chapter 09 — the harness's out-of-line parts (see harness.hpp): the shapes, the inputs,
// the matrices on the device, the CPU references and the comparison that names what is
// wrong. Host code only.
#include "harness.hpp"

#include "cml/buffers.hpp"
#include "cml/errors.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <memory>
#include <set>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace ch09 {

// ---- Shapes ------------------------------------------------------------------------------

std::string describe(const Shape& s) {
  char text[160];
  if (s.gram)
    std::snprintf(text, sizeof text, "Gram m=%d k=%d", s.m, s.k);
  else
    std::snprintf(text, sizeof text, "m=%d n=%d k=%d", s.m, s.n, s.k);
  std::string out = text;
  if (s.extra_ld != 0) out += ", ld +" + std::to_string(s.extra_ld);
  if (s.what != nullptr && s.what[0] != '\0') out += std::string(" (") + s.what + ")";
  return out;
}

const std::vector<Shape>& gemm_shapes() {
  static const std::vector<Shape> shapes = {
      gemm_shape(128, 128, 128, "square, whole tiles"),
      gemm_shape(256, 128, 64, "tall, whole tiles"),
      gemm_shape(128, 256, 96, "wide, whole tiles"),
      gemm_shape(300, 200, 128, "ragged edges, whole k-tiles"),
      gemm_shape(128, 128, 100, "whole edges, a K tail"),
      gemm_shape(129, 257, 65, "one past a tile on every side"),
      gemm_shape(97, 131, 77, "ragged everywhere"),
      gemm_shape(1000, 40, 64, "tall and thin"),
      gemm_shape(40, 1000, 64, "short and wide"),
      gemm_shape(1100, 300, 24, "9 tile rows of 128 and 2-3 tile columns: a band of rows that is not whole"),
      gemm_shape(1409, 1409, 133, "ragged, 96 tiles of 128 x 192 on 96 to 143 SMs, 5 k-tiles of 32: stages reused"),
      gemm_shape(70, 90, 1, "k = 1"),
      gemm_shape(1, 300, 129, "one row"),
      gemm_shape(300, 1, 129, "one column"),
      gemm_shape(1, 1, 1, "one element"),
      gemm_shape(1, 1, 1000, "one element, long k"),
      gemm_shape(33, 65, 0, "k = 0: C becomes zeros"),
      gemm_shape(0, 64, 64, "m = 0: nothing to do"),
      gemm_shape(64, 0, 64, "n = 0: nothing to do"),
      gemm_shape(96, 96, 96, "rows 8 floats wider than the pad", 8),
      gemm_shape(513, 517, 519, "large, ragged"),
  };
  return shapes;
}

const std::vector<Shape>& gram_shapes() {
  static const std::vector<Shape> shapes = {
      gram_shape(128, 128, "whole tiles"),
      gram_shape(256, 64, "whole tiles, more rows"),
      gram_shape(300, 128, "ragged edges, whole k-tiles"),
      gram_shape(128, 100, "whole edges, a K tail"),
      gram_shape(129, 65, "one past a tile on every side"),
      gram_shape(77, 1, "k = 1"),
      gram_shape(1, 50, "one row: a 1 x 1 result"),
      gram_shape(65, 0, "k = 0: C becomes zeros"),
      gram_shape(0, 10, "m = 0: nothing to do"),
      gram_shape(96, 96, "rows 8 floats wider than the pad", 8),
      gram_shape(513, 519, "large, ragged"),
  };
  return shapes;
}

const std::vector<Shape>& bench_shapes() {
  static const std::vector<Shape> shapes = {
      gemm_shape(4096, 4096, 4096, "square"),
      gemm_shape(8192, 8192, 8192, "square"),
      gemm_shape(4097, 4093, 4091, "ragged: no side a multiple of 2"),
  };
  return shapes;
}

// ---- Inputs ------------------------------------------------------------------------------

namespace {

std::uint64_t splitmix64(std::uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

}  // namespace

float input_value(std::uint64_t seed, int r, int c) {
  const std::uint64_t at =
      (static_cast<std::uint64_t>(static_cast<std::uint32_t>(r)) << 32) | static_cast<std::uint32_t>(c);
  const std::uint64_t h = splitmix64(splitmix64(seed) ^ at);
  const int v = static_cast<int>(h >> 40);  // 24 bits
  return static_cast<float>(v - (1 << 23)) * 0x1p-23f;
}

HostMatrix random_matrix(int rows, int cols, std::uint64_t seed, int extra_ld) {
  HostMatrix h;
  h.rows = rows;
  h.cols = cols;
  h.ld = padded_ld(cols, extra_ld);
  h.data.assign(static_cast<std::size_t>(rows) * static_cast<std::size_t>(h.ld), from_bits(kInputPoison));
  for (int r = 0; r < rows; ++r)
    for (int c = 0; c < cols; ++c) h.data[static_cast<std::size_t>(r) * h.ld + c] = input_value(seed, r, c);
  return h;
}

// ---- Matrices on the device ----------------------------------------------------------------

DeviceMatrix::DeviceMatrix(int rows, int cols, int ld)
    : rows_(rows),
      cols_(cols),
      ld_(ld),
      guard_(guard_floats(ld)),
      buffer_(static_cast<std::size_t>(rows) * static_cast<std::size_t>(ld) + guard_floats(ld)) {}

std::uint64_t DeviceMatrix::bytes(int rows, int ld) {
  return (static_cast<std::uint64_t>(rows) * static_cast<std::uint64_t>(ld) + guard_floats(ld)) * sizeof(float);
}

void DeviceMatrix::upload(const HostMatrix& h) {
  if (h.rows != rows_ || h.cols != cols_ || h.ld != ld_)
    throw std::logic_error("DeviceMatrix::upload: the host matrix has another shape");
  const std::size_t n = static_cast<std::size_t>(rows_) * static_cast<std::size_t>(ld_);
  cml::upload(buffer_.data(), h.data.data(), n);
  const std::vector<float> guard(guard_, from_bits(kInputPoison));
  cml::upload(buffer_.data() + n, guard.data(), guard.size());
}

void DeviceMatrix::poison(cudaStream_t stream) const {
  CUDA_CHECK(cudaMemsetAsync(buffer_.data(), 0xFF, buffer_.bytes(), stream));
}

void DeviceMatrix::read(HostMatrix& matrix, std::vector<float>& guard, cudaStream_t stream) const {
  const std::size_t n = static_cast<std::size_t>(rows_) * static_cast<std::size_t>(ld_);
  matrix.rows = rows_;
  matrix.cols = cols_;
  matrix.ld = ld_;
  matrix.data.resize(n);
  guard.resize(guard_);
  if (n > 0)
    CUDA_CHECK(cudaMemcpyAsync(matrix.data.data(), buffer_.data(), n * sizeof(float), cudaMemcpyDeviceToHost, stream));
  CUDA_CHECK(cudaMemcpyAsync(guard.data(), buffer_.data() + n, guard_ * sizeof(float), cudaMemcpyDeviceToHost, stream));
  CUDA_CHECK(cudaStreamSynchronize(stream));
}

namespace {

// The shape itself, once it is known to be one: no negative size, n = m for a Gram shape, an
// extra leading dimension that keeps rows on 16 bytes.
const Shape& valid(const Shape& s) {
  if (s.m < 0 || s.n < 0 || s.k < 0 || (s.gram && s.n != s.m) || s.extra_ld < 0 || s.extra_ld % 4 != 0)
    throw std::invalid_argument("Problem: not a shape: " + describe(s));
  return s;
}

}  // namespace

Problem::Problem(const Shape& shape, std::uint64_t seed)
    : shape_(valid(shape)),
      a_(random_matrix(shape.m, shape.k, seed, shape.extra_ld)),
      b_(shape.gram ? HostMatrix{} : random_matrix(shape.k, shape.n, seed + 1, shape.extra_ld)),
      a_dev_(a_.rows, a_.cols, a_.ld),
      b_dev_(b_.rows, b_.cols, b_.ld),
      c_dev_(shape.m, shape.n, padded_ld(shape.n, shape.extra_ld)) {
  a_dev_.upload(a_);
  b_dev_.upload(b_);
  c_dev_.poison(nullptr);
  CUDA_CHECK(cudaDeviceSynchronize());
}

Output Problem::read_c(cudaStream_t stream) const {
  Output o;
  c_dev_.read(o.c, o.guard, stream);
  return o;
}

std::uint64_t Problem::device_bytes(const Shape& s) {
  const std::uint64_t a = DeviceMatrix::bytes(s.m, padded_ld(s.k, s.extra_ld));
  const std::uint64_t b = s.gram ? DeviceMatrix::bytes(0, 0) : DeviceMatrix::bytes(s.k, padded_ld(s.n, s.extra_ld));
  return a + b + DeviceMatrix::bytes(s.m, padded_ld(s.n, s.extra_ld));
}

// ---- References --------------------------------------------------------------------------

namespace {

// The exact sum and its magnitude for one element, over the terms p < terms.
Element element_of(const Problem& p, int r, int c, int terms) {
  Element e;
  e.row = r;
  e.col = c;
  for (int q = 0; q < terms; ++q) {
    const double x = p.a().at(r, q), y = p.b_at(q, c);
    e.want += x * y;
    e.mag += std::fabs(x * y);
  }
  return e;
}

}  // namespace

Reference cpu_reference_full(const Problem& p) {
  const Shape& s = p.shape();
  const std::size_t m = static_cast<std::size_t>(s.m), n = static_cast<std::size_t>(s.n);
  auto want = std::make_shared<std::vector<double>>(m * n, 0.0);
  auto mag = std::make_shared<std::vector<double>>(m * n, 0.0);
  const HostMatrix& a = p.a();
  for (std::size_t i = 0; i < m; ++i) {
    double* w = want->data() + i * n;
    double* g = mag->data() + i * n;
    const float* ai = a.data.data() + i * static_cast<std::size_t>(a.ld);
    if (s.gram) {
      for (std::size_t j = 0; j < n; ++j) {
        const float* aj = a.data.data() + j * static_cast<std::size_t>(a.ld);
        double acc = 0, abs = 0;
        for (int q = 0; q < s.k; ++q) {
          const double t = static_cast<double>(ai[q]) * static_cast<double>(aj[q]);
          acc += t;
          abs += std::fabs(t);
        }
        w[j] = acc;
        g[j] = abs;
      }
    } else {
      const HostMatrix& b = p.b();
      for (int q = 0; q < s.k; ++q) {
        const double x = ai[q];
        const float* bq = b.data.data() + static_cast<std::size_t>(q) * static_cast<std::size_t>(b.ld);
        for (std::size_t j = 0; j < n; ++j) {
          const double t = x * static_cast<double>(bq[j]);
          w[j] += t;
          g[j] += std::fabs(t);
        }
      }
    }
  }
  Reference r;
  r.source = "the CPU";
  r.every = true;
  r.count = m * n;
  r.at = [want, mag, n](std::size_t i) {
    Element e;
    e.row = static_cast<int>(i / n);
    e.col = static_cast<int>(i % n);
    e.want = (*want)[i];
    e.mag = (*mag)[i];
    return e;
  };
  return r;
}

Reference cpu_reference_sampled(const Problem& p, int samples) {
  const Shape& s = p.shape();
  std::set<std::pair<int, int>> at;
  if (s.m > 0 && s.n > 0) {
    const int m = s.m, n = s.n;
    // The rows and columns worth a look: both ends, the middle, and both sides of every
    // tile boundary the checks know (where an edge tile starts).
    std::vector<int> rows = {0, m / 2, m - 1}, cols = {0, n / 2, n - 1};
    for (const int t : tile_sides()) {
      for (const int v : {t - 1, t, m / t * t - 1, m / t * t})
        if (v >= 0 && v < m) rows.push_back(v);
      for (const int v : {t - 1, t, n / t * t - 1, n / t * t})
        if (v >= 0 && v < n) cols.push_back(v);
    }
    for (const int r : {0, m - 1})
      for (const int c : {0, n - 1}) at.insert({r, c});  // the four corners
    for (const int c : cols) at.insert({m - 1, c});      // the last row
    for (const int r : rows) at.insert({r, n - 1});      // the last column
    for (std::size_t i = 0; i < rows.size(); ++i) at.insert({rows[i], cols[i % cols.size()]});
    const std::size_t all = static_cast<std::size_t>(m) * static_cast<std::size_t>(n);
    const std::size_t target =
        std::min<std::size_t>(all, std::max<std::size_t>(static_cast<std::size_t>(samples), at.size()));
    for (std::uint64_t i = 0; at.size() < target; ++i) {
      const std::uint64_t h = splitmix64(0x5EEDull + i);
      at.insert({static_cast<int>(h % static_cast<std::uint64_t>(m)),
                 static_cast<int>((h >> 32) % static_cast<std::uint64_t>(n))});
    }
  }
  auto elements = std::make_shared<std::vector<Element>>();
  elements->reserve(at.size());
  for (const auto& [r, c] : at) elements->push_back(element_of(p, r, c, s.k));
  Reference r;
  r.source = "the CPU";
  r.every = false;
  r.count = elements->size();
  r.at = [elements](std::size_t i) { return (*elements)[i]; };
  return r;
}

Reference cpu_reference(const Problem& p) {
  const Shape& s = p.shape();
  const double work = static_cast<double>(s.m) * s.n * s.k;
  return work <= kFullReferenceWork ? cpu_reference_full(p) : cpu_reference_sampled(p);
}

Reference cublas_reference(const Problem& p, const HostMatrix& c_ref) {
  const Shape& s = p.shape();
  if (c_ref.rows != s.m || c_ref.cols != s.n)
    throw std::logic_error("cublas_reference: the result has another shape than the problem");
  auto row_norm = std::make_shared<std::vector<double>>(static_cast<std::size_t>(s.m), 0.0);
  auto col_norm = std::make_shared<std::vector<double>>(static_cast<std::size_t>(s.n), 0.0);
  for (int i = 0; i < s.m; ++i) {
    double sum = 0;
    for (int q = 0; q < s.k; ++q) sum += static_cast<double>(p.a().at(i, q)) * p.a().at(i, q);
    (*row_norm)[static_cast<std::size_t>(i)] = std::sqrt(sum);
  }
  if (s.gram) {
    *col_norm = *row_norm;
  } else {
    std::vector<double> sums(static_cast<std::size_t>(s.n), 0.0);
    for (int q = 0; q < s.k; ++q)
      for (int j = 0; j < s.n; ++j)
        sums[static_cast<std::size_t>(j)] += static_cast<double>(p.b().at(q, j)) * p.b().at(q, j);
    for (int j = 0; j < s.n; ++j)
      (*col_norm)[static_cast<std::size_t>(j)] = std::sqrt(sums[static_cast<std::size_t>(j)]);
  }
  const HostMatrix* c = &c_ref;
  const std::size_t n = static_cast<std::size_t>(s.n);
  Reference r;
  r.source = "cuBLAS";
  r.scale = 2.0;
  r.every = true;
  r.count = static_cast<std::size_t>(s.m) * n;
  r.at = [c, row_norm, col_norm, n](std::size_t i) {
    Element e;
    e.row = static_cast<int>(i / n);
    e.col = static_cast<int>(i % n);
    e.want = c->at(e.row, e.col);
    e.mag = (*row_norm)[static_cast<std::size_t>(e.row)] * (*col_norm)[static_cast<std::size_t>(e.col)];
    return e;
  };
  return r;
}

// ---- The comparison ------------------------------------------------------------------------

std::string Report::describe() const { return ok ? "PASSED" : "FAILED: " + what; }

namespace {

std::string num(double v) {
  char text[48];
  std::snprintf(text, sizeof text, "%.9g", v);
  return text;
}

std::string at_text(int r, int c) { return "C(" + std::to_string(r) + ", " + std::to_string(c) + ")"; }

// Where the edge tiles of side t start: rows >= row_edge, columns >= col_edge (m and n
// themselves when they are multiples of t: no edge on that side).
struct Edge {
  int t, row_edge, col_edge;
  bool in_edge(int r, int c) const { return r >= row_edge || c >= col_edge; }
};
Edge edge_of(int t, int m, int n) { return Edge{t, m / t * t, n / t * t}; }

// Counts, for every tile side, the flagged elements outside the edge tiles and the checked
// ones inside the whole tiles, and on which side of the edge the flagged ones are.
struct EdgeTally {
  std::vector<Edge> edges;
  std::vector<std::size_t> outside, interior, in_rows, in_cols;
  EdgeTally(int m, int n) {
    for (const int t : tile_sides()) edges.push_back(edge_of(t, m, n));
    outside.assign(edges.size(), 0);
    interior.assign(edges.size(), 0);
    in_rows.assign(edges.size(), 0);
    in_cols.assign(edges.size(), 0);
  }
  void checked(int r, int c) {
    for (std::size_t i = 0; i < edges.size(); ++i)
      if (!edges[i].in_edge(r, c)) ++interior[i];
  }
  // Every element of C was checked: the whole tiles' elements, counted at once.
  void all_checked() {
    for (std::size_t i = 0; i < edges.size(); ++i)
      interior[i] = static_cast<std::size_t>(edges[i].row_edge) * static_cast<std::size_t>(edges[i].col_edge);
  }
  void flagged(int r, int c) {
    for (std::size_t i = 0; i < edges.size(); ++i) {
      if (!edges[i].in_edge(r, c)) ++outside[i];
      if (r >= edges[i].row_edge) ++in_rows[i];
      if (c >= edges[i].col_edge) ++in_cols[i];
    }
  }
  // "" unless every flagged element lies in the edge tiles of some side t while whole
  // tiles were checked too; then where, for the smallest such t.
  std::string where(int m, int n) const {
    for (std::size_t i = 0; i < edges.size(); ++i) {
      const Edge& e = edges[i];
      const bool ragged = e.row_edge < m || e.col_edge < n;
      if (!ragged || outside[i] != 0 || interior[i] == 0) continue;
      // Every side whose edge tiles are these same rows and columns fits as well.
      std::string sides;
      for (const Edge& o : edges)
        if (o.row_edge == e.row_edge && o.col_edge == e.col_edge)
          sides += (sides.empty() ? "" : ", ") + std::to_string(o.t);
      std::string side;
      if (in_rows[i] > 0) side += "rows >= " + std::to_string(e.row_edge) + " (m = " + std::to_string(m) + ")";
      if (in_cols[i] > 0)
        side += std::string(side.empty() ? "" : " or ") + "columns >= " + std::to_string(e.col_edge) +
                " (n = " + std::to_string(n) + ")";
      return side + ", the last partial tile for tiles of " + sides + ", while the whole tiles are right";
    }
    return "";
  }
};

Report fail(Report r, Fault kind, std::string what) {
  r.ok = false;
  r.kind = kind;
  r.what = std::move(what);
  return r;
}

std::string first_text(const Report& r) {
  return "the first at " + at_text(r.row, r.col) + ": got " + num(r.got) + ", want " + num(r.want) + " (bound " +
         num(r.bound) + ")";
}

}  // namespace

Report compare(const Problem& p, const Output& got, const Reference& ref) {
  const Shape& s = p.shape();
  const int m = s.m, n = s.n, ldc = got.c.ld;
  Report rep;
  rep.checked = ref.count;

  // 1. Past C's end: the guard rows.
  for (std::size_t i = 0; i < got.guard.size(); ++i)
    if (bits_of(got.guard[i]) != kOutputPoison) {
      const std::size_t row = ldc > 0 ? static_cast<std::size_t>(m) + i / static_cast<std::size_t>(ldc) : m;
      return fail(rep, Fault::past_end,
                  "C was written past its last row: element " + std::to_string(i) + " after C's end (row " +
                      std::to_string(row) + ", m = " + std::to_string(m) + "): the stores of the last partial tile " +
                      "need the bounds check row < m (and col < n)");
    }

  // 2. C's pad columns.
  for (int r = 0; r < m; ++r)
    for (int c = n; c < ldc; ++c)
      if (bits_of(got.c.at(r, c)) != kOutputPoison)
        return fail(rep, Fault::pad_written,
                    "a pad column of C was written: C(" + std::to_string(r) + ", " + std::to_string(c) +
                        ") with n = " + std::to_string(n) + " and ld = " + std::to_string(ldc) +
                        " (columns n .. ld - 1 are not part of C): the stores of the last partial tile need the "
                        "bounds check col < n, with n, not ld");

  // 3 and 4. Every element of C: never written, or NaN.
  std::size_t unwritten = 0, nans = 0;
  int ur = -1, uc = -1, nr = -1, nc = -1;
  EdgeTally unwritten_tally(m, n), nan_tally(m, n);
  unwritten_tally.all_checked();
  nan_tally.all_checked();
  for (int r = 0; r < m; ++r)
    for (int c = 0; c < n; ++c) {
      const float v = got.c.at(r, c);
      if (bits_of(v) == kOutputPoison) {
        if (unwritten++ == 0) ur = r, uc = c;
        unwritten_tally.flagged(r, c);
      } else if (std::isnan(v)) {
        if (nans++ == 0) nr = r, nc = c;
        nan_tally.flagged(r, c);
      }
    }
  const std::size_t all = static_cast<std::size_t>(m) * static_cast<std::size_t>(n);
  if (unwritten > 0) {
    rep.wrong = unwritten + nans;
    rep.row = ur;
    rep.col = uc;
    rep.got = got.c.at(ur, uc);
    std::string what = std::to_string(unwritten) + " of " + std::to_string(all) +
                       " elements of C were never written (they still hold the poison), the first at " +
                       at_text(ur, uc);
    const std::string edge = unwritten_tally.where(m, n);
    if (unwritten == all)
      what +=
          ": no element was written: does the function launch its kernel on `stream`, over a grid that covers C "
          "(and write zeros when k = 0)?";
    else if (!edge.empty())
      what = "ragged edge: " + what + ": all in " + edge +
             ": the grid must cover ceil(m / tile) x ceil(n / tile) tiles, and the edge tiles must store what they "
             "computed inside C";
    else
      what +=
          ": some blocks or threads store nothing (the grid, the mapping of threads to C's elements, or a "
          "return before the store)";
    return fail(rep, Fault::unwritten, what);
  }
  if (nans > 0) {
    rep.wrong = nans;
    rep.row = nr;
    rep.col = nc;
    rep.got = got.c.at(nr, nc);
    std::string what = std::to_string(nans) + " of " + std::to_string(all) + " elements of C are NaN, the first at " +
                       at_text(nr, nc) +
                       ": a NaN got into the sum. A's and B's pad columns and the rows past their ends hold NaN here, "
                       "so a load outside the matrix (a column >= k of A or >= n of B, a row past the end: the last "
                       "partial tile must use zeros there, not load), or shared memory read before the block filled "
                       "it (a missing barrier; the checks fill shared memory with NaN first) makes NaN";
    const std::string edge = nan_tally.where(m, n);
    if (!edge.empty()) what = "ragged edge: " + what + "; all in " + edge;
    return fail(rep, Fault::nan, what);
  }

  // 5. The values, against the reference.
  EdgeTally tally(m, n);
  if (ref.every) tally.all_checked();
  std::vector<std::pair<Element, float>> wrong;  // the first few, for the K tail's test
  for (std::size_t i = 0; i < ref.count; ++i) {
    const Element e = ref.at(i);
    if (!ref.every) tally.checked(e.row, e.col);
    const float g = got.c.at(e.row, e.col);
    const double bound = error_bound(s.k, e.mag, ref.scale);
    if (std::fabs(static_cast<double>(g) - e.want) <= bound) continue;
    if (rep.wrong++ == 0) {
      rep.row = e.row;
      rep.col = e.col;
      rep.got = g;
      rep.want = e.want;
      rep.bound = bound;
    }
    tally.flagged(e.row, e.col);
    if (wrong.size() < 32) wrong.emplace_back(e, g);
  }
  if (rep.wrong == 0) return rep;

  const std::string count = std::to_string(rep.wrong) + " of " + std::to_string(ref.count) +
                            (ref.every ? " elements" : " sampled elements") + " differ from " + ref.source +
                            " by more than the FP32 rounding of a " + std::to_string(s.k) + "-term sum";
  if (const std::string edge = tally.where(m, n); !edge.empty())
    return fail(rep, Fault::ragged_edge,
                "ragged edge: " + count + ", all in " + edge +
                    ": the edge tiles must load zeros past m and n (and past k) and compute with them; " +
                    first_text(rep));

  // The K tail: each wrong element equals its sum without the last k mod t terms, for a
  // k-tile of t (k-tiles of 4 to 64: a larger t would take any result of zeros for a tail).
  std::vector<int> tails;
  int missing = 0;
  for (const int t : {4, 8, 16, 32, 64}) {
    if (s.k % t == 0) continue;
    const int kept = s.k / t * t;
    bool all_match = true;
    for (const auto& [e, g] : wrong) {
      const Element partial = element_of(p, e.row, e.col, kept);
      if (std::fabs(static_cast<double>(g) - partial.want) > error_bound(s.k, e.mag, ref.scale)) {
        all_match = false;
        break;
      }
    }
    if (all_match && (tails.empty() || s.k % t == missing)) {
      tails.push_back(t);
      missing = s.k % t;
    }
  }
  if (!tails.empty()) {
    std::string sides;
    for (const int t : tails) sides += (sides.empty() ? "" : " or ") + std::to_string(t);
    return fail(rep, Fault::k_tail,
                "the K tail: " + count + ", each by exactly its last " + std::to_string(missing) +
                    " term(s): k = " + std::to_string(s.k) + " is not a multiple of the k-tile (" + sides +
                    " fits), and the last, partial k-tile was left out: load it with zeros past k and add it; " +
                    first_text(rep));
  }
  if (rep.wrong * 2 >= ref.count)
    return fail(rep, Fault::everywhere,
                "wrong everywhere: " + count +
                    ": the sum itself is wrong (the indexing of A or B, a tile loaded from the wrong place, a missing "
                    "barrier between filling the tiles and using them); " +
                    first_text(rep));
  return fail(rep, Fault::some,
              "wrong in places: " + count +
                  ": a race (a barrier missing before a tile is overwritten), or one part of the mapping of threads "
                  "to C (one warp's or thread's rows or columns); " +
                  first_text(rep));
}

std::string failure_pattern(const std::vector<ShapeVerdict>& verdicts) {
  std::vector<const Shape*> failing, passing;
  for (const auto& v : verdicts) (v.ok ? passing : failing).push_back(&v.shape);
  if (failing.empty() || passing.empty()) return "";
  const auto all_of = [](const std::vector<const Shape*>& list, auto pred) {
    return std::all_of(list.begin(), list.end(), [&](const Shape* s) { return pred(*s); });
  };
  const auto any_of = [](const std::vector<const Shape*>& list, auto pred) {
    return std::any_of(list.begin(), list.end(), [&](const Shape* s) { return pred(*s); });
  };
  const auto ks = [](const std::vector<const Shape*>& list) {
    std::string text;
    for (const Shape* s : list) text += (text.empty() ? "k = " : ", ") + std::to_string(s->k);
    return text;
  };
  if (all_of(failing, [](const Shape& s) { return s.k == 0; }))
    return "fails only where k = 0: with no term to add, C must still be written, with zeros";
  for (const int t : {4, 8, 16, 32, 64}) {
    if (all_of(failing, [t](const Shape& s) { return s.k % t != 0; }) &&
        any_of(passing, [t](const Shape& s) { return s.k > 0 && s.k % t == 0 && s.m > 0 && s.n > 0; }))
      return "fails only where k is not a multiple of " + std::to_string(t) + " (" + ks(failing) +
             "), passes where it is: the K tail: the last, partial k-tile must be loaded with zeros past k, and added";
  }
  for (const int t : {4, 8, 16, 32, 64, 128}) {
    const auto ragged = [t](const Shape& s) { return s.m % t != 0 || s.n % t != 0; };
    if (all_of(failing, ragged) &&
        any_of(passing, [&](const Shape& s) { return !ragged(s) && s.m > 0 && s.n > 0 && s.k > 0; }))
      return "fails only where m or n is not a multiple of " + std::to_string(t) +
             ", passes where both are: the ragged edge: the last partial tiles must load zeros past m and n and "
             "store only inside C";
  }
  return "";
}

// ---- The steps -------------------------------------------------------------------------------

std::string Variant::label() const {
  return std::string(name) + (step == 0 ? " (provided)" : " (step " + std::to_string(step) + ")");
}

const std::vector<Variant>& variants() {
  static const std::vector<Variant> v = {
      {"sgemm_naive", "sgemm_naive_kernel", 0, "a thread per element, global memory only", sgemm_naive, nullptr},
      {"sgemm_tiled", "sgemm_tiled_kernel", 1, "shared-memory tiles", sgemm_tiled, nullptr},
      {"gram_tiled", "gram_tiled_kernel", 2, "C = A A^T, the transposed tile conflict-free", nullptr, gram_tiled},
      {"sgemm_registers", "sgemm_registers_kernel", 3, "register blocking, 16-byte shared loads", sgemm_registers,
       nullptr},
      {"sgemm_warp_tiled", "sgemm_warp_tiled_kernel", 4, "warp tiles: few, conflict-free fragment loads",
       sgemm_warp_tiled, nullptr},
      {"sgemm_pipelined", "sgemm_pipelined_kernel", 5, "a multi-stage cp.async pipeline", sgemm_pipelined, nullptr},
      {"sgemm_tma", "sgemm_tma_kernel", 6, "TMA tiles on mbarriers", sgemm_tma, nullptr},
  };
  return v;
}

void run(const Variant& v, const Problem& p, cudaStream_t stream) {
  if (v.is_gram() != p.shape().gram)
    throw std::invalid_argument(std::string("ch09::run: ") + v.name + " computes " +
                                (v.is_gram() ? "a Gram matrix" : "a product") + ", and the shape is " +
                                describe(p.shape()));
  if (v.is_gram())
    v.gram(p.a_view(), p.c_view(), stream);
  else
    v.gemm(p.a_view(), p.b_view(), p.c_view(), stream);
}

void run_cublas(Cublas& cublas, const Problem& p, cudaStream_t stream) {
  if (p.shape().gram)
    cublas.sgemm(p.a_view(), p.a_view(), p.c_view(), stream, true);
  else
    cublas.sgemm(p.a_view(), p.b_view(), p.c_view(), stream);
}

CublasResult checked_cublas(Cublas& cublas, const Problem& p, cudaStream_t stream) {
  p.poison_c(stream);
  run_cublas(cublas, p, stream);
  CublasResult r{p.read_c(stream), {}};
  r.against_cpu = compare(p, r.c, cpu_reference_sampled(p));
  return r;
}

Report run_and_compare(const Problem& p, const std::function<void(cudaStream_t)>& enqueue, const Reference& ref,
                       cudaStream_t stream) {
  p.poison_c(stream);
  scrub_shared_memory(stream);
  enqueue(stream);
  return compare(p, p.read_c(stream), ref);
}

}  // namespace ch09
