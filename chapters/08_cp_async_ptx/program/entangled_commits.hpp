// Chapter 08 — the kernels of --mode=entangled (program/entangled_commits.cu): does a
// cp.async.wait_group count the calling thread's groups, or its warp's? The source notes
// (the CUDA guide on memcpy_async, for compute capability 8.x) say the batch sequence is the
// warp's: lanes that commit in diverged branches each advance it, so a later wait may wait
// for more than the thread's own groups. These kernels commit converged, diverged by half
// warp, or diverged and reconverged before one commit, and time the wait. Host-compatible.
#pragma once

#include "pieces.hpp"

#include <cuda_runtime_api.h>

#include <cstddef>
#include <vector>

namespace ch08 {

// How the lanes of a warp commit a tile's copies.
enum class Commit {
  converged,    // every lane copies and commits in the same instruction
  diverged,     // lanes 0-15 copy and commit in one branch, lanes 16-31 in the other
  reconverged,  // the copies in the two branches, then __syncwarp() and one commit
};

struct CommitKind {
  Commit commit;
  int wait;            // the N of the timed cp.async.wait_group N (0 or 1)
  const char* name;    // as the table prints it
  const char* kernel;  // the kernel's demangled name in SASS
};
const std::vector<CommitKind>& commit_kinds();

// out[p] = in[p] for p < pieces, one tile of 256 pieces per block and round, thread t
// copying piece t of the tile with one 16-byte cp.async.cg, committed as k.commit says.
// Then the thread reads clock64, runs cp.async.wait_group k.wait, reads clock64 again and
// adds the difference to cycles[block * 256 + t]; then it waits for everything
// (wait_group 0), so each tile starts with nothing in flight, and stores its own piece.
// Per thread, each tile has one group in flight at the timed wait: counted per thread,
// wait_group 1 returns at once. cycles: blocks * 256 entries, written (not added to).
// Only enqueues.
void copy_entangled(const CommitKind& k, const Piece* in, std::size_t pieces, Piece* out, unsigned long long* cycles,
                    int blocks, cudaStream_t stream);

// The tiles (rounds) block b runs over `pieces` pieces on `blocks` blocks.
inline std::size_t tiles_of_block(std::size_t pieces, int blocks, int b) {
  const std::size_t tiles = (pieces + kThreads - 1) / kThreads, grid = static_cast<std::size_t>(blocks);
  const std::size_t first = static_cast<std::size_t>(b);
  return tiles > first ? (tiles - first + grid - 1) / grid : 0;
}

}  // namespace ch08
