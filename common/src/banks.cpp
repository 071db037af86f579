// See cml/banks.hpp: the rules and their sources are listed there, numbered as here.
#include "cml/banks.hpp"

#include <algorithm>
#include <stdexcept>
#include <string>

namespace cml {

namespace {

bool is_active(std::uint32_t mask, unsigned lane) { return ((mask >> lane) & 1u) != 0; }

// Rule 4's condition, over the whole warp: each active lane's partner lane ^ `flip` is
// inactive or touches the same address.
bool partners_agree(const SharedAccess& a, unsigned flip) {
  for (unsigned l = 0; l < 32; ++l) {
    const unsigned p = l ^ flip;
    if (is_active(a.active, l) && is_active(a.active, p) && a.address[l] != a.address[p]) return false;
  }
  return true;
}

// Rules 1 and 2: the wavefronts of one transaction serving `lanes`.
BankTransaction serve(const SharedAccess& a, std::uint32_t lanes) {
  std::array<std::vector<std::uint32_t>, kBanks> words;  // distinct words asked of each bank
  const unsigned per_lane = std::max(1u, a.width / kBankBytes);
  for (unsigned l = 0; l < 32; ++l) {
    if (!is_active(lanes, l)) continue;
    for (unsigned k = 0; k < per_lane; ++k) {
      const std::uint32_t word = a.address[l] / kBankBytes + k;
      auto& bank = words[word % kBanks];
      if (std::find(bank.begin(), bank.end(), word) == bank.end()) bank.push_back(word);
    }
  }
  BankTransaction t;
  t.lanes = lanes;
  for (unsigned b = 0; b < kBanks; ++b) {
    if (words[b].size() > t.wavefronts) {
      t.wavefronts = static_cast<unsigned>(words[b].size());
      t.worst_bank = b;
    }
  }
  return t;
}

std::uint32_t part_mask(unsigned part, unsigned lanes_per_part) {
  const std::uint32_t ones = lanes_per_part == 32 ? 0xffffffffu : ((1u << lanes_per_part) - 1u);
  return ones << (part * lanes_per_part);
}

void add(BankCount& total, const BankTransaction& t) {
  total.transactions += 1;
  total.wavefronts += t.wavefronts;
  total.conflicts += t.wavefronts - 1;  // rule 5
  total.ways = std::max(total.ways, t.wavefronts);
  total.detail.push_back(t);
}

}  // namespace

BankCount count_banks(const SharedAccess& a) {
  if (a.width != 1 && a.width != 2 && a.width != 4 && a.width != 8 && a.width != 16)
    throw std::invalid_argument("count_banks: width must be 1, 2, 4, 8 or 16 bytes, not " + std::to_string(a.width));
  for (unsigned l = 0; l < 32; ++l)
    if (is_active(a.active, l) && a.address[l] % a.width != 0)
      throw std::invalid_argument("count_banks: lane " + std::to_string(l) + "'s address " +
                                  std::to_string(a.address[l]) + " is not aligned to " + std::to_string(a.width) +
                                  " bytes");

  // Rule 3: the parts the warp is split into.
  const unsigned lanes_per_part = a.width <= 4 ? 32 : (a.width == 8 ? 16 : 8);
  const unsigned parts = 32 / lanes_per_part;
  std::vector<std::uint32_t> active_parts;
  for (unsigned p = 0; p < parts; ++p)
    if ((a.active & part_mask(p, lanes_per_part)) != 0) active_parts.push_back(a.active & part_mask(p, lanes_per_part));

  BankCount c;
  // Rule 4: parts merge within a half-warp (for 8 bytes the half-warps are the parts, and
  // the warp is the "half" they merge into), when one partner rule holds warp-wide.
  const bool rule = !a.store && parts > 1 && (partners_agree(a, 1) || partners_agree(a, 2));
  if (!rule) {
    for (const auto lanes : active_parts) add(c, serve(a, lanes));
    return c;
  }
  const unsigned merged_lanes = a.width == 8 ? 32 : 16;  // no cascading beyond a half-warp
  for (unsigned h = 0; h < 32 / merged_lanes; ++h) {
    const std::uint32_t lanes = a.active & part_mask(h, merged_lanes);
    if (lanes == 0) continue;
    unsigned joined = 0;
    for (const auto part : active_parts) joined += (part & lanes) != 0 ? 1u : 0u;
    if (joined > 1) c.merged = true;
    add(c, serve(a, lanes));
  }
  return c;
}

BankCount count_banks(const std::vector<SharedAccess>& accesses) {
  BankCount total;
  for (const auto& a : accesses) {
    const BankCount c = count_banks(a);
    total.transactions += c.transactions;
    total.wavefronts += c.wavefronts;
    total.conflicts += c.conflicts;
    total.ways = std::max(total.ways, c.ways);
    total.merged = total.merged || c.merged;
    total.detail.insert(total.detail.end(), c.detail.begin(), c.detail.end());
  }
  return total;
}

std::string describe(const BankCount& c) {
  std::string s = std::to_string(c.transactions) + (c.transactions == 1 ? " transaction, " : " transactions, ") +
                  std::to_string(c.wavefronts) + (c.wavefronts == 1 ? " wavefront, " : " wavefronts, ") +
                  std::to_string(c.conflicts) + (c.conflicts == 1 ? " conflict" : " conflicts");
  if (c.ways > 1) s += " (" + std::to_string(c.ways) + "-way)";
  if (c.merged) s += ", merged";
  return s;
}

}  // namespace cml
