// Verification against a CPU reference. Every program checks its own result and prints
// "PASSED" or "FAILED: first mismatch at i: got x, want y (k of n wrong)".
#pragma once

#include <cmath>
#include <cstddef>
#include <cstdio>
#include <sstream>
#include <string>
#include <type_traits>

namespace cml {

// A matrix a check runs on, with the words its failure message names it by ("tall,
// ragged"): the chapters' checked shapes are lists of these.
struct MatrixShape {
  int rows, cols;
  const char* what;
};

struct VerifyResult {
  bool ok = true;
  std::size_t first_bad = 0;  // index of the first mismatch
  std::size_t bad_count = 0;  // how many elements differ
  std::size_t count = 0;      // how many were compared
  std::string got, want;      // the first mismatch, as text

  std::string describe() const {
    if (ok) return "PASSED";
    std::ostringstream os;
    os << "FAILED: first mismatch at " << first_bad << ": got " << got << ", want " << want << " (" << bad_count
       << " of " << count << " wrong)";
    return os.str();
  }
};

namespace detail {
template <typename T>
std::string as_text(const T& v) {
  std::ostringstream os;
  if constexpr (std::is_same_v<T, std::byte>)
    os << static_cast<int>(v);
  else if constexpr (sizeof(T) == 1 && std::is_integral_v<T>)
    os << static_cast<int>(v);
  else {
    os.precision(9);
    os << v;
  }
  return os.str();
}

template <typename T, typename Same>
VerifyResult compare(const T* got, const T* want, std::size_t n, Same same) {
  VerifyResult r;
  r.count = n;
  for (std::size_t i = 0; i < n; ++i) {
    if (same(got[i], want[i])) continue;
    if (r.ok) {
      r.ok = false;
      r.first_bad = i;
      r.got = as_text(got[i]);
      r.want = as_text(want[i]);
    }
    ++r.bad_count;
  }
  return r;
}
}  // namespace detail

// Exact comparison: integers and bytes, and floats computed the same way on both sides.
template <typename T>
VerifyResult compare_exact(const T* got, const T* want, std::size_t n) {
  return detail::compare(got, want, n, [](const T& a, const T& b) { return a == b; });
}

// |got - want| <= abs_tol + rel_tol * |want|; NaN never passes.
template <typename T>
VerifyResult compare_close(const T* got, const T* want, std::size_t n, double rel_tol, double abs_tol = 0.0) {
  return detail::compare(got, want, n, [=](const T& a, const T& b) {
    const double x = static_cast<double>(a), y = static_cast<double>(b);
    return std::fabs(x - y) <= abs_tol + rel_tol * std::fabs(y);  // false for NaN
  });
}

// Prints "<what>: PASSED" or "<what>: FAILED: ..." and returns r.ok.
inline bool report(const VerifyResult& r, const std::string& what, std::FILE* out = stdout) {
  std::fprintf(out, "%s: %s\n", what.c_str(), r.describe().c_str());
  return r.ok;
}

}  // namespace cml
