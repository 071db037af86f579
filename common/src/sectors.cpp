// See cml/sectors.hpp.
#include "cml/sectors.hpp"

#include <algorithm>
#include <stdexcept>
#include <string>

namespace cml {

SectorCount count_sectors(const WarpAccess& a) {
  if (a.width != 1 && a.width != 2 && a.width != 4 && a.width != 8 && a.width != 16)
    throw std::invalid_argument("count_sectors: width must be 1, 2, 4, 8 or 16 bytes, not " + std::to_string(a.width));
  std::vector<std::uint64_t> sectors, lines, bytes;
  SectorCount c;
  for (unsigned t = 0; t < 32; ++t) {
    if (((a.active >> t) & 1u) == 0) continue;
    const std::uint64_t addr = a.address[t];
    if (addr % a.width != 0)
      throw std::invalid_argument("count_sectors: thread " + std::to_string(t) + "'s address is not aligned to " +
                                  std::to_string(a.width) + " bytes");
    c.requested += a.width;
    // An aligned access of up to 16 bytes never crosses a 32-byte sector.
    sectors.push_back(addr / 32);
    lines.push_back(addr / 128);
    for (unsigned b = 0; b < a.width; ++b) bytes.push_back(addr + b);
  }
  const auto distinct = [](std::vector<std::uint64_t>& v) {
    std::sort(v.begin(), v.end());
    return static_cast<std::uint64_t>(std::unique(v.begin(), v.end()) - v.begin());
  };
  c.sectors = static_cast<unsigned>(distinct(sectors));
  c.lines = static_cast<unsigned>(distinct(lines));
  c.unique = distinct(bytes);
  c.moved = static_cast<std::uint64_t>(c.sectors) * 32;
  return c;
}

WarpAccess strided_access(std::uint64_t base, std::uint64_t warp, std::uint64_t stride, std::uint64_t offset,
                          unsigned elem_bytes) {
  WarpAccess a;
  a.width = elem_bytes;
  for (unsigned t = 0; t < 32; ++t) a.address[t] = base + ((warp * 32 + t) * stride + offset) * elem_bytes;
  return a;
}

namespace {
template <typename F>
void each_warp(std::uint64_t base, std::uint64_t warps, std::uint64_t stride, std::uint64_t offset, unsigned elem_bytes,
               F&& f) {
  if (warps == 0) throw std::invalid_argument("sector model: at least one warp");
  for (std::uint64_t w = 0; w < warps; ++w) f(count_sectors(strided_access(base, w, stride, offset, elem_bytes)));
}
}  // namespace

double sectors_per_request(std::uint64_t base, std::uint64_t warps, std::uint64_t stride, std::uint64_t offset,
                           unsigned elem_bytes) {
  std::uint64_t total = 0;
  each_warp(base, warps, stride, offset, elem_bytes, [&](const SectorCount& c) { total += c.sectors; });
  return static_cast<double>(total) / static_cast<double>(warps);
}

double efficiency(std::uint64_t base, std::uint64_t warps, std::uint64_t stride, std::uint64_t offset,
                  unsigned elem_bytes) {
  std::uint64_t unique = 0, moved = 0;
  each_warp(base, warps, stride, offset, elem_bytes, [&](const SectorCount& c) {
    unique += c.unique;
    moved += c.moved;
  });
  return moved ? static_cast<double>(unique) / static_cast<double>(moved) : 0.0;
}

}  // namespace cml
