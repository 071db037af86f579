// Chapter 04 — the float4 copy variants of --mode=vector (see vector_variants.cu).
#pragma once

#include "cml/timing.hpp"

#include <cstddef>
#include <string>
#include <utility>
#include <vector>

namespace ch04 {

// A copy to time, with the name its table row shows.
using NamedCopy = std::pair<std::string, cml::Work>;

// The variants over n floats (a multiple of 4, 16-byte aligned) from `in` to `out`, each
// enqueuing one kernel on the stream it is given.
std::vector<NamedCopy> vector_variants(const float* in, float* out, std::size_t n);

}  // namespace ch04
