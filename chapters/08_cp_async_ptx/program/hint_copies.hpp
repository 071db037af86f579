// Chapter 08 — the copies of --mode=cache-hints (program/hint_copies.cu): 16-byte
// cp.async.cg into shared memory and out again, with each optional part of the instruction
// the source notes list and the steps leave out — an L2 cache policy (.L2::cache_hint), an
// L2 prefetch size (.L2::64B/128B/256B), and ignore-src, which writes zeros without reading.
// Host-compatible: the mode includes it.
#pragma once

#include "pieces.hpp"

#include "cp_async_ptx.cuh"

#include <cuda_runtime_api.h>

#include <cstddef>
#include <vector>

namespace ch08 {

// What the copy adds to a plain cp.async.cg.
enum class Hint { none, evict_first, evict_last, prefetch_64, prefetch_128, prefetch_256 };

struct HintKind {
  Hint hint;
  const char* name;    // as the tables print it
  const char* kernel;  // the kernel's demangled name in SASS
};
const std::vector<HintKind>& hint_kinds();

// out[p] = in[p] for p < pieces: each thread copies 4 pieces per round into shared memory
// (16 KiB per block of 256 threads), waits for its own copies and stores them (the thread
// reads back only what it copied: no barrier). The copies carry `hint`; with evict_first or
// evict_last the stores carry the same L2 policy, so the whole copy's lines, read and
// written, have that priority. Only enqueues.
void copy_hinted(Hint hint, const Piece* in, std::size_t pieces, Piece* out, int blocks, cudaStream_t stream);

// How a masked piece lands as zeros with nothing read: cp.async's ignore-src predicate, or
// a src-size operand of 0 (the form step 1's tail uses).
enum class Unread { ignore_src, src_size_zero };

// Piece p is masked when bit `run_log2` of p is set: half of the pieces, in runs of
// 2^run_log2 (a shift, not a division: the mask costs the kernel next to nothing).
CH08_HD inline bool masked(std::size_t p, unsigned run_log2) { return ((p >> run_log2) & 1u) != 0; }

// copy_hinted's plain copy, except that masked pieces are not read: they land as zeros.
// Kernels: masked_copy_kernel<Unread>. Only enqueues; std::invalid_argument for a run_log2
// past 40.
void copy_masked(Unread how, unsigned run_log2, const Piece* in, std::size_t pieces, Piece* out, int blocks,
                 cudaStream_t stream);

}  // namespace ch08
