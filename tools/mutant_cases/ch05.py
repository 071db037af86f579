"""Chapter 05's mutants: see tools/mutants.py. One per step at least, each a mistake the
chapter teaches, caught by the named step's tests with the message that names it."""
from . import Mutant

CHAPTER = "05_shared_memory"

# The tile load's bounds test, as the solution writes it, and the same test for a load down a
# column (rows and columns of the tile swapped).
LOAD_IF = "      if (inside(row0 + y + k * kBlockRows, col0 + x + h * kTile, rows, cols))\n"
LOAD_IF_T = "      if (inside(row0 + x + h * kTile, col0 + y + k * kBlockRows, rows, cols))\n"

MUTANTS = [
    # Rows and cols swapped in the write's bounds check: square matrices (every tile full
    # or the check symmetric) pass, non-square ones lose rows of `out` and ragged ones write
    # into the wrong row. Swapping the write's index instead (`* rows` -> `* cols`) writes
    # up to 4x past `out` on the 512 x 2048 shape: an illegal address, not this lesson.
    Mutant("rows and cols swapped in the write's bounds (shows on non-square shapes only)",
           [("      if (inside(col0 + y + k * kBlockRows, row0 + x + h * kTile, cols, rows))\n        v[h][k] = tile[",
             "      if (inside(col0 + y + k * kBlockRows, row0 + x + h * kTile, rows, cols))\n        v[h][k] = tile["),
            ("      if (inside(col0 + y + k * kBlockRows, row0 + x + h * kTile, cols, rows))\n        dst[",
             "      if (inside(col0 + y + k * kBlockRows, row0 + x + h * kTile, rows, cols))\n        dst[")],
           "[step1][correctness]", "square matrices pass, so rows and cols"),
    Mutant("no barrier between writing the tile and reading it",
           [("  // Other warps wrote the tile's columns this warp is about to read.\n  __syncthreads();\n",
             "  // Other warps wrote the tile's columns this warp is about to read.\n")],
           "[step1][mechanism]", "racecheck found hazards in transpose_tiled_kernel"),
    Mutant("padding on the wrong dimension (a pad row: tile[T + 1][T])",
           [("  return row * (T + Pad) + ", "  return row * T + ")],
           "[step2][mechanism]", "a pad row"),
    Mutant("a swizzle that is not a bijection (OR instead of XOR)",
           [("(Swizzle ? (col ^ (row & (kTile - 1))) : col)", "(Swizzle ? (col | (row & (kTile - 1))) : col)")],
           "[step3][correctness]", "a swizzle must be a bijection"),
    Mutant("swizzle on the loads only (the stores keep the plain layout)",
           [("        tile[tile_index<T, Pad, Swizzle>(y + k * kBlockRows, x + h * kTile)] = v[h][k];",
             "        tile[tile_index<T, Pad, false>(y + k * kBlockRows, x + h * kTile)] = v[h][k];")],
           "[step3][correctness]", "the same on the store and on the load"),
    Mutant("the float4 tile not swizzled (column reads 8-way per quarter-warp)",
           [("{ return vec ^ ((row / 4) % 8); }", "{ (void)row; return vec; }")],
           "[step4][mechanism]", "swizzle the float4 columns"),
    Mutant("the float4 tile padded by one float4 (still 4-way)",
           [("  __shared__ float4 tile[kWideTile][kWideVecs];", "  __shared__ float4 tile[kWideTile][kWideVecs + 1];"),
            ("{ return vec ^ ((row / 4) % 8); }", "{ (void)row; return vec; }")],
           "[step4][mechanism]", "swizzle the float4 columns"),
    # Issue 26: steps 1-3's grid, one block per tile. Extra blocks find no tile and write
    # nothing, so every result is right: only the launch's record shows them.
    Mutant("the grid counted in the block's 8-row strips, not in tiles (4x too many blocks)",
           [("  const unsigned tile_rows = static_cast<unsigned>((rows + side - 1) / side);\n",
             "  const unsigned tile_rows = static_cast<unsigned>((rows + kBlockRows - 1) / kBlockRows);\n")],
           "[step1][mechanism]", "too many blocks"),
    Mutant("tiles rounded up once too often (rows / T + 1)",
           [("  const unsigned tile_rows = static_cast<unsigned>((rows + side - 1) / side);\n"
             "  const unsigned tile_cols = static_cast<unsigned>((cols + side - 1) / side);\n",
             "  const unsigned tile_rows = static_cast<unsigned>(rows / side + 1);\n"
             "  const unsigned tile_cols = static_cast<unsigned>(cols / side + 1);\n")],
           "[step2][mechanism]", "too many blocks"),
    Mutant("the tile columns counted from rows (a copy-paste slip)",
           [("  const unsigned tile_cols = static_cast<unsigned>((cols + side - 1) / side);\n",
             "  const unsigned tile_cols = static_cast<unsigned>((rows + side - 1) / side);\n  (void)cols;\n")],
           "[step3][mechanism]", "too many blocks"),
    # Issue 26: a launch on another stream than the one given. The check's readback waits on
    # the given stream only, so the results may still come out right: the trace shows where
    # the kernel ran.
    Mutant("the tile transposes launched on the legacy stream",
           [("  kernel<<<tiles_launch(rows, cols, kSolutionTile), dim3(kTile, kBlockRows), 0, stream>>>(in, out, rows, cols);\n",
             "  (void)stream;\n  kernel<<<tiles_launch(rows, cols, kSolutionTile), dim3(kTile, kBlockRows)>>>(in, out, rows, cols);\n")],
           "[step1][mechanism]", "on the legacy default stream"),
    Mutant("transpose_wide on the per-thread default stream",
           [("  transpose_wide_kernel<<<grid, kWideThreads, 0, stream>>>(", "  (void)stream;\n"
             "  transpose_wide_kernel<<<grid, kWideThreads, 0, cudaStreamPerThread>>>(")],
           "[step4][mechanism]", "ran on another stream than the one it was given"),
    # Issue 26: a load past the end of `in`. An edge tile's rows past the matrix loaded (the
    # column checked, the row not): what they bring is never stored, so every result is
    # right; only an input that ends at an unmapped page shows the read.
    Mutant("the tile load checks the column only (an edge tile's rows past the matrix loaded)",
           [("      if (inside(row0 + y + k * kBlockRows, col0 + x + h * kTile, rows, cols))\n        v[h][k] = src[",
             "      if (Whole || col0 + x + h * kTile < cols)\n        v[h][k] = src[")],
           "[step1][correctness]", "loaded past in's last element"),
    Mutant("transpose_wide loads an edge tile's rows past the matrix",
           [("    if (row0 + r < rows && col0 + 4 * v < cols)\n      tile[r][wide_column(r, v)] = in[",
             "    if (col0 + 4 * v < cols)\n      tile[r][wide_column(r, v)] = in[")],
           "[step4][correctness]", "loaded past in's last element"),
    # "Keep the tile's rows 16-byte aligned": a pad of 4 floats, where 1 is what spreads a column
    # over the banks. Every column read is then 4-way: right results, no race.
    Mutant("the tile padded by 4 floats (rows kept 16-byte aligned: 4-way conflicts)",
           [("  transpose_tile<kSolutionTile, 1, false>(in, out, rows, cols);\n",
             "  transpose_tile<kSolutionTile, 4, false>(in, out, rows, cols);\n")],
           "[step2][mechanism]", "bank conflicts in its shared loads"),
    # Step 4's kernel reads other threads' float4s from the tile: without its barrier it reads
    # them before they are written.
    Mutant("no barrier in transpose_wide_kernel between writing the tile and reading it",
           [("  __syncthreads();\n  // Write: lane a", "  // Write: lane a")],
           "[step4][mechanism]", "racecheck found hazards in transpose_wide_kernel"),
    # The transpose done on the read side: a warp reads down a column of `in` (lane x takes row
    # row0 + x) and stores what it read where the solution's tile has it. The tile's contents,
    # the barrier, the write phase and every result are the solution's; only the loads are
    # uncoalesced (32 sectors per request where rows give 4).
    Mutant("the input read down its columns (the transpose done by the loads, the tile a round trip)",
           [("  const float* src = in + static_cast<std::size_t>(row0 + y) * cols + col0 + x;\n",
             "  const float* src = in + static_cast<std::size_t>(row0 + x) * cols + col0 + y;\n"),
            (LOAD_IF + "        v[h][k] = src[static_cast<std::size_t>(k * kBlockRows) * cols + h * kTile];\n",
             LOAD_IF_T + "        v[h][k] = src[static_cast<std::size_t>(h * kTile) * cols + k * kBlockRows];\n"),
            (LOAD_IF + "        tile[tile_index<T, Pad, Swizzle>(y + k * kBlockRows, x + h * kTile)] = v[h][k];\n",
             LOAD_IF_T + "        tile[tile_index<T, Pad, Swizzle>(x + h * kTile, y + k * kBlockRows)] = v[h][k];\n")],
           "[step1][mechanism]", "sectors per global load request"),
    # Step 4's grid counted in steps 1-3's 32-wide tiles around its 64 x 64 float tile: four
    # times the blocks, three in four past the matrix. Every result is right.
    Mutant("transpose_wide's grid counted in 32-wide tiles (4x the blocks, 3 in 4 idle)",
           [("  const dim3 grid = tiles_launch(rows, cols, kWideTile);\n",
             "  const dim3 grid = tiles_launch(rows, cols, kSolutionTile);\n")],
           "[step4][mechanism]", "have no tile to move"),
    # Issue 38's second read (2026-12-06): the tile's offsets in int, right below 2^31 elements.
    Mutant("the tile's global offsets computed in int (wrong past 2^31 elements)",
           [("  const float* src = in + static_cast<std::size_t>(row0 + y) * cols + col0 + x;\n",
             "  const float* src = in + ((row0 + y) * cols + col0 + x);\n"),
            ("  float* dst = out + static_cast<std::size_t>(col0 + y) * rows + row0 + x;\n",
             "  float* dst = out + ((col0 + y) * rows + row0 + x);\n")],
           "[step1][correctness]", "wraps past 2^31 - 1"),
]
