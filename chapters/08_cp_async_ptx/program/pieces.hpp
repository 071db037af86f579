// Chapter 08 — what the two experiments of program/ (--mode=cache-hints, --mode=entangled)
// share on the host: arrays of 16-byte pieces with their host copy, a copy run into a
// poisoned output, the comparison, and the lengths both are checked on.
#pragma once

#include "harness.hpp"

#include "cml/buffers.hpp"
#include "cml/errors.hpp"
#include "cml/verify.hpp"

#include <algorithm>
#include <cstddef>
#include <functional>
#include <string>
#include <vector>

namespace ch08 {

using Piece = uint4;  // 16 bytes: what one cp.async.cg moves

// `pieces` pieces of make_input's words on the device (in), an output of the same size
// (out), and the words on the host for the checks.
struct Pieces {
  std::vector<Word> host;  // 4 words per piece
  cml::DeviceBuffer<Piece> in, out;

  explicit Pieces(std::size_t pieces)
      : host(make_input(4 * pieces)), in(std::max<std::size_t>(pieces, 1)), out(std::max<std::size_t>(pieces, 1)) {
    cml::upload(reinterpret_cast<Word*>(in.data()), host.data(), host.size());
  }
  std::size_t count() const { return host.size() / 4; }
  std::size_t bytes() const { return host.size() * sizeof(Word); }

  // Runs `copy` on `stream` into `out` poisoned with 0xFF bytes: what landed, as words.
  std::vector<Word> landed(const std::function<void(cudaStream_t)>& copy, cudaStream_t stream) {
    CUDA_CHECK(cudaMemsetAsync(out.data(), 0xFF, out.bytes(), stream));
    copy(stream);
    std::vector<Word> got(host.size());
    if (!got.empty())
      CUDA_CHECK(cudaMemcpyAsync(got.data(), out.data(), got.size() * sizeof(Word), cudaMemcpyDeviceToHost, stream));
    CUDA_CHECK(cudaStreamSynchronize(stream));
    return got;
  }
};

// got against want, word for word; the first mismatch printed under `what`.
inline bool same_words(const std::vector<Word>& got, const std::vector<Word>& want, const std::string& what) {
  const auto r = cml::compare_exact(got.data(), want.data(), got.size());
  return r.ok || cml::report(r, what);
}

// The lengths, in pieces, and grids the experiments are checked on: none, one, less than a
// block's round, more than one, a round and a few on several blocks, blocks with several
// rounds.
struct PieceCase {
  std::size_t pieces;
  int blocks;
};
inline const std::vector<PieceCase>& piece_cases() {
  static const std::vector<PieceCase> c = {
      {0, 2}, {1, 1}, {255, 1}, {1025, 3}, {5 * 1024 + 7, 4}, {(1u << 16) + 3, 37}};
  return c;
}

}  // namespace ch08
