"""Chapter 09's mutants: see tools/mutants.py. Two or more per step, each a mistake the
chapter teaches, caught by the named step's tests with the message that names it (the
test's INFO text, or the harness's description of the failure: chapters/09_sgemm/harness.cu,
compare() and failure_pattern()).

Steps 5 and 6 share multiply_stage and store_pipe_tile: no mutant here touches them, so
each mutant changes one step's kernel only (the epilogue mutant of step 6 replaces step 6's
call, not the shared function).

Step 5's cp.async.wait_group 0 is named by the SASS check of the wait's count, and the
racecheck target's k of 1000 refills every stage of steps 5 and 6 eight times or more."""
from . import Mutant

CHAPTER = "09_sgemm"

MUTANTS = [
    # ---- Step 1 ---------------------------------------------------------------------------
    # Step 1. threadIdx.x along the row index of both tiles: lane x loads row x of each tile,
    # so a warp's 32 loads touch 32 rows (32 sectors per request). The tiles still hold the
    # right floats, so the results are right; ncu sees the sectors.
    Mutant("the tiles loaded down their columns (lane x reads row x: uncoalesced)",
           [("      as[r][x] = row0 + r < m && p0 + x < k ? a[static_cast<std::size_t>(row0 + r) * lda + p0 + x] : 0.0f;\n"
             "      bs[r][x] = p0 + r < k && col0 + x < n ? b[static_cast<std::size_t>(p0 + r) * ldb + col0 + x] : 0.0f;\n",
             "      as[x][r] = row0 + x < m && p0 + r < k ? a[static_cast<std::size_t>(row0 + x) * lda + p0 + r] : 0.0f;\n"
             "      bs[x][r] = p0 + x < k && col0 + r < n ? b[static_cast<std::size_t>(p0 + x) * ldb + col0 + r] : 0.0f;\n")],
           "[step1][mechanism][profile]", "32 means each lane reads another row"),
    # Step 1. "One barrier is enough": the next k-tile's loads overwrite the tiles while
    # slower warps still compute on them. The racecheck target (k = 45) has 2 k-tiles. (The
    # SASS check fails too: one BAR.SYNC, not 2.)
    Mutant("no barrier before the next tiles are loaded (tiles overwritten while read)",
           [("    __syncthreads();  // nobody overwrites the tiles while another thread still reads them\n", "")],
           "[step1][mechanism]", "racecheck found hazards in sgemm_tiled_kernel"),
    # Step 1. The store's bounds check forgets the columns: the edge tiles of a ragged n
    # write past the row's end, into the next row and, from C's last row, past C's end.
    Mutant("the store checks the row only (col < n dropped)",
           [("    if (r < m && col < n) c[static_cast<std::size_t>(r) * ldc + col] = acc[i];\n",
             "    if (r < m) c[static_cast<std::size_t>(r) * ldc + col] = acc[i];\n")],
           "[step1][correctness]", "C was written past its last row"),
    # Step 1. "This thread has no column of C": an early return before the loop. The
    # returned threads never load their column x of the A tile (a k-column every thread
    # uses), so the edge tiles of a ragged n compute on shared memory nobody filled (NaN
    # from the checks' scrub, or another block's floats). Exited threads do not hold up
    # __syncthreads on current GPUs, so it does not hang.
    Mutant("an early return for threads past n (they never load their part of the tiles)",
           [("  const int x = static_cast<int>(threadIdx.x), y = static_cast<int>(threadIdx.y);\n"
             "  float acc[kPerThread] = {};\n"
             "  for (int p0 = 0; p0 < k; p0 += kTile) {\n"
             "    // Outside the matrix",
             "  const int x = static_cast<int>(threadIdx.x), y = static_cast<int>(threadIdx.y);\n"
             "  if (col0 + x >= n) return;  // no column of C for this thread\n"
             "  float acc[kPerThread] = {};\n"
             "  for (int p0 = 0; p0 < k; p0 += kTile) {\n"
             "    // Outside the matrix")],
           "[step1][correctness]", "ragged edge"),

    # Step 1. A's row bound dropped from the tile load: the last row of blocks loads up to 31
    # rows past A's end. Their products land only in rows of C that are never stored, so the
    # results stay right and the harness's guard rows hide the reads; an A that ends at an
    # unmapped page faults.
    Mutant("A's row bound dropped from the tile load (rows past m loaded)",
           [("      as[r][x] = row0 + r < m && p0 + x < k ? a[static_cast<std::size_t>(row0 + r) * lda + p0 + x] : 0.0f;\n",
             "      as[r][x] = p0 + x < k ? a[static_cast<std::size_t>(row0 + r) * lda + p0 + x] : 0.0f;\n")],
           "[step1][correctness]", "read past the last element"),

    # ---- Step 2 ---------------------------------------------------------------------------
    # Step 2. The transposed tile without its pad: rows_j[x][p] is word 32 x + p, bank p for
    # all 32 lanes (32-way).
    Mutant("the transposed tile unpadded ([32][32]: a column in one bank)",
           [("  __shared__ float rows_j[kTile][kTile + 1];  // rows_j[r][p] = A(col0 + r, p0 + p), padded\n",
             "  __shared__ float rows_j[kTile][kTile];  // rows_j[r][p] = A(col0 + r, p0 + p)\n")],
           "[step2][mechanism][profile]", "puts a column in one bank unless its rows are padded"),
    # Step 2. The pad on the wrong dimension: [33][32] adds a row, the pitch stays 32 words.
    Mutant("the pad on the wrong dimension ([33][32]: a pad row)",
           [("  __shared__ float rows_j[kTile][kTile + 1];  // rows_j[r][p] = A(col0 + r, p0 + p), padded\n",
             "  __shared__ float rows_j[kTile + 1][kTile];  // rows_j[r][p] = A(col0 + r, p0 + p), padded\n")],
           "[step2][mechanism][profile]", "puts a column in one bank unless its rows are padded"),
    # Step 2. Step 1's A line copied for the second tile, the array renamed only: both tiles
    # are rows row0.. of A, so only the diagonal tiles of C are right (4 of 16 at 128 x 128).
    Mutant("the second tile loaded from the block's rows, not its columns (A's row used for both)",
           [("      rows_j[r][x] = col0 + r < m && in_k ? a[static_cast<std::size_t>(col0 + r) * lda + p0 + x] : 0.0f;\n",
             "      rows_j[r][x] = row0 + r < m && in_k ? a[static_cast<std::size_t>(row0 + r) * lda + p0 + x] : 0.0f;\n")],
           "[step2][correctness]", "wrong everywhere"),
    # Step 2. No barrier between storing the tiles and reading them across their rows.
    Mutant("no barrier between filling the tiles and reading them",
           [("    __syncthreads();\n"
             "#pragma unroll\n"
             "    for (int p = 0; p < kTile; ++p) {\n"
             "      const float aj = rows_j[x][p];",
             "#pragma unroll\n"
             "    for (int p = 0; p < kTile; ++p) {\n"
             "      const float aj = rows_j[x][p];")],
           "[step2][mechanism]", "racecheck found hazards in gram_tiled_kernel"),

    # ---- Step 3 ---------------------------------------------------------------------------
    # Step 3. The micro-tile's row loop kept rolled: acc[i][j] and af[i] with a run-time i
    # cannot live in registers and go to local memory (LDL/STL).
    Mutant("the plain micro-tile's row loop not unrolled (acc indexed at run time: local memory)",
           [("#pragma unroll\n"
             "      for (int i = 0; i < kMicro; ++i)\n"
             "#pragma unroll\n"
             "        for (int j = 0; j < kMicro; ++j) acc[i][j] = fmaf(af[i], bf[j], acc[i][j]);\n",
             "#pragma unroll 1\n"
             "      for (int i = 0; i < kMicro; ++i)\n"
             "#pragma unroll\n"
             "        for (int j = 0; j < kMicro; ++j) acc[i][j] = fmaf(af[i], bf[j], acc[i][j]);\n")],
           "[step3][mechanism]", "went to local memory"),
    # Step 3. Whole k-tiles only: the loop stops before a partial last k-tile.
    Mutant("the plain kernel's K tail left out (whole k-tiles only)",
           [("  for (int p0 = 0; p0 < k; p0 += kBK) {\n    tiles.store(",
             "  for (int p0 = 0; p0 + kBK <= k; p0 += kBK) {\n    tiles.store(")],
           "[step3][correctness]", "the K tail"),
    # Step 3. One barrier a tile: the next tile's stores overwrite what slower warps still read.
    Mutant("no barrier after the plain kernel's compute (the next tiles overwrite these while read)",
           [("    __syncthreads();  // the next tiles are stored only once every thread has read these\n", "")],
           "[step3][mechanism]", "racecheck found hazards in sgemm_registers_kernel"),

    # ---- Step 4 ---------------------------------------------------------------------------
    # Step 4. Step 3's plain layout kept inside the warp-tiled kernel: threads 16 x 16 over
    # the block tile, each on 8 adjacent rows and columns, so a warp's B load touches 16
    # pieces 32 bytes apart (0.31 wavefronts a FFMA on the H100, against 0.19). Right and
    # 16 bytes wide: the wavefronts per FFMA tell, and the speed.
    Mutant("step 3's 16 x 16 thread layout in the warp-tiled kernel (a warp spans a row of C)",
           [("  const int tid = static_cast<int>(threadIdx.x), warp = tid / 32, lane = tid % 32;\n",
             "  const int tid = static_cast<int>(threadIdx.x);\n"),
            ("kMicro = T::kMicroM, kWarpM = T::kWarpM,\n                kWarpN = T::kWarpN, kWarpsN = T::kWarpsN;\n",
             "kMicro = T::kMicroM;\n"),
            ("  const int am = (warp / kWarpsN) * kWarpM + lane / 4 * 4;  // first of the thread's rows\n",
             "  const int am = tid / 16 * 8;  // first of the thread's rows\n"),
            ("  const int bn = (warp % kWarpsN) * kWarpN + lane % 4 * 4;  // first of its columns\n",
             "  const int bn = tid % 16 * 8;  // first of its columns\n"),
            ("&as[q][am + 32]", "&as[q][am + 4]"),
            ("&bs[q][bn + 16]", "&bs[q][bn + 4]"),
            ("    const int r = row0 + am + i / 4 * 32 + i % 4;\n", "    const int r = row0 + am + i;\n"),
            ("    store4(row, col0 + bn + 16, n, acc[i] + 4);\n", "    store4(row, col0 + bn + 4, n, acc[i] + 4);\n")],
           "[step4][mechanism][profile]", "a warp whose lanes span a long row of C"),
    # Step 4. The loop over the micro-tile's rows kept rolled ("smaller code"): acc[i][j] and
    # av[i] with a run-time i cannot live in registers and go to local memory (LDL/STL).
    Mutant("the micro-tile's row loop not unrolled (acc indexed at run time: local memory)",
           [("#pragma unroll\n"
             "      for (int i = 0; i < kMicro; ++i)\n"
             "#pragma unroll\n"
             "        for (int j = 0; j < kMicro; ++j) acc[i][j] = fmaf(av[i], bv[j], acc[i][j]);\n",
             "#pragma unroll 1\n"
             "      for (int i = 0; i < kMicro; ++i)\n"
             "#pragma unroll\n"
             "        for (int j = 0; j < kMicro; ++j) acc[i][j] = fmaf(av[i], bv[j], acc[i][j]);\n")],
           "[step4][mechanism]", "went to local memory"),
    # Step 4. Step 1's habit in the micro-tile: a thread's 8 rows 8 apart (lane / 4 + 8 i).
    # Right, and conflict-free, but its fragment of A is 8 scattered words of the
    # transposed tile: 8 four-byte LDS per k where 2 LDS.128 would do.
    Mutant("a thread's rows 8 apart (A's fragment loaded 4 bytes at a time)",
           [("  const int am = (warp / kWarpsN) * kWarpM + lane / 4 * 4;  // first of the thread's rows\n",
             "  const int am = (warp / kWarpsN) * kWarpM + lane / 4;  // first of the thread's rows\n"),
            ("      unpack(*reinterpret_cast<const float4*>(&as[q][am]), av);\n"
             "      unpack(*reinterpret_cast<const float4*>(&as[q][am + 32]), av + 4);\n",
             "#pragma unroll\n"
             "      for (int i = 0; i < kMicro; ++i) av[i] = as[q][am + 8 * i];\n"),
            ("    const int r = row0 + am + i / 4 * 32 + i % 4;\n",
             "    const int r = row0 + am + 8 * i;\n")],
           "[step4][mechanism]", "a thread's fragments of A and B stay rows of 4 consecutive floats"),
    # Step 4. Whole k-tiles only: the last k mod 8 terms are never added.
    Mutant("the K tail left out (k / kBK tiles)",
           [("  const int tiles_k = ceil_div(k, kBK);\n  for (int t = 0; t < tiles_k; ++t) {\n    const int p0 = t * kBK;\n",
             "  const int tiles_k = k / kBK;\n  for (int t = 0; t < tiles_k; ++t) {\n    const int p0 = t * kBK;\n")],
           "[step4][correctness]", "the K tail"),
    # Steps 3 and 4 (their shared pitch). Step 2's pad of one float on a tile read by float4:
    # rows of 129 floats, so a fragment is 16-byte aligned for even k only and the LDS.128
    # faults (step 3's kernel first).
    Mutant("the transposed A tile padded by one float (float4 reads misaligned)",
           [("constexpr int kTransposedPitch = T::kBlockM + 4;\n", "constexpr int kTransposedPitch = T::kBlockM + 1;\n")],
           "[step3][correctness]", "misaligned address"),

    # Step 3. Every thread fetches its row of A, inside the matrix or not: rows past m are
    # read (the results stay right, as in step 1's mutant) and the unmapped page faults.
    Mutant("the A rows past m fetched too (no row check on the 16-byte loads)",
           [("        a_inside(row0 + a_row < m),\n", "        a_inside(true),\n")],
           "[step3][correctness]", "read past the last element"),

    # ---- Step 5 ---------------------------------------------------------------------------
    # Step 5. wait_group 0: every committed group waited for, tile t + kStages - 2 too. The
    # results stay right; the SASS check of the wait's count sees DEPBAR.LE SB0, 0x0 where
    # the solution has 0x2.
    Mutant("cp.async.wait_group 0 (waits for the tiles ahead too: less overlap)",
           [("    cp_async_wait<kStages - 2>();  // this thread's pieces of tile t have landed...\n",
             "    cp_async_wait<0>();  // this thread's pieces of tile t have landed...\n")],
           "[step5][mechanism]", "all wait for every group"),
    # Step 5. "Each thread waited for its copies": no barrier after the wait. Threads read
    # pieces other threads' copies are still writing (and refill a stage others read).
    Mutant("no block barrier after the wait (other threads' pieces read unwaited)",
           [("    __syncthreads();\n    if (t + kStages - 1 < tiles_k) issue(t + kStages - 1, fill);\n",
             "    if (t + kStages - 1 < tiles_k) issue(t + kStages - 1, fill);\n")],
           "[step5][mechanism]", "racecheck found hazards in sgemm_pipelined_kernel"),
    # Step 5. The wait after the barrier: at the barrier, each thread has waited for nothing
    # yet; after it, for its own copies only.
    Mutant("the wait after the block barrier (other threads' copies not waited for)",
           [("    cp_async_wait<kStages - 2>();  // this thread's pieces of tile t have landed...\n",
             ""),
            ("    __syncthreads();\n    if (t + kStages - 1 < tiles_k) issue(t + kStages - 1, fill);\n",
             "    __syncthreads();\n    cp_async_wait<kStages - 2>();\n"
             "    if (t + kStages - 1 < tiles_k) issue(t + kStages - 1, fill);\n")],
           "[step5][mechanism]", "racecheck found hazards in sgemm_pipelined_kernel"),
    # Step 5. The zero fill's size forced to 16: a piece the row ends inside is copied whole,
    # reading A's pad columns (NaN in the checks) where k is not a multiple of 4. B's rows
    # past k are zero-filled, and NaN x 0 is NaN: every element of C. (The SASS check of
    # [step5][mechanism] fails too: with src-size 0 or 16 only, nvcc 13.0 emits no .ZFILL.)
    Mutant("a piece the row ends inside copied whole (src-size 16, not 4 x floats left)",
           [("  return left <= 0 ? 0 : left >= 4 ? 16 : 4 * left;\n", "  return left <= 0 ? 0 : 16;\n")],
           "[step5][correctness]", "a NaN got into the sum"),
    # Step 5. Chapter 07's way: a float at a time. 4-byte cp.async exist only as .ca
    # (LDGSTS.E, through L1), four times the copies, and no LDGSTS.E.BYPASS.128.
    Mutant("4-byte copies (cp.async.ca of one float, four per piece)",
           [('  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\\n" ::"r"(\n'
             "                   static_cast<std::uint32_t>(__cvta_generic_to_shared(dst))),\n"
             '               "l"(__cvta_generic_to_global(src)), "r"(src_bytes)\n'
             '               : "memory");\n',
             "#pragma unroll\n"
             "  for (int j = 0; j < 4; ++j)\n"
             '    asm volatile("cp.async.ca.shared.global [%0], [%1], 4, %2;\\n" ::"r"(\n'
             "                     static_cast<std::uint32_t>(__cvta_generic_to_shared(static_cast<float*>(dst) + j))),\n"
             '                 "l"(__cvta_generic_to_global(static_cast<const float*>(src) + j)),\n'
             '                 "r"(src_bytes > 4 * j ? 4 : 0)\n'
             '                 : "memory");\n')],
           "[step5][mechanism]", "16 bytes at a time, bypassing L1"),

    # ---- Step 6 ---------------------------------------------------------------------------
    # Step 6. No wait on the empty barrier: thread 0 refills the stage of tile t - 1 while
    # other warps may still read it. racecheck does not track TMA's writes; under it the
    # producer laps its slowed consumers on the racecheck target (67 x 71 x 1000: 32 k-tiles
    # of 32), a full barrier's phase is missed and the kernel times out (H200; at k = 200 it
    # finished right, docs/09_sgemm.md, step 6).
    Mutant("no wait on the empty barrier before the refill (a stage overwritten while read)",
           [("      const unsigned prev_parity = stage == 0 ? parity ^ 1u : parity;\n"
             "      wait_phase(&empty[prev], prev_parity, false, prev);\n", "")],
           "[step6][mechanism]", "racecheck found hazards in sgemm_tma_kernel"),
    # Step 6. Step 5's epilogue (two groups of 4 columns) kept for a tile whose threads hold
    # 16 columns: right with the 128 x 128 tile (8 columns a thread) that every checked shape
    # gets, half of C unwritten with the 128 x 256 tile that only the speed bar's 4096^3
    # problem gets. Caught by the speed case's result check, before any time is judged.
    Mutant("step 5's 8-column epilogue kept for the wide tile (only large problems take it)",
           [("  store_pipe_tile<T>(c, ldc, m, n, row0 + am, col0 + bn, acc);\n#else\n  (void)map_a;",
             "  for (int i = 0; i < T::kMicroM; ++i)\n"
             "    if (row0 + am + 8 * i < m)\n"
             "      for (int jj = 0; jj < 2; ++jj)\n"
             "        store4(c + static_cast<std::size_t>(row0 + am + 8 * i) * ldc, col0 + bn + 16 * jj, n, acc[i] + 4 * jj);\n"
             "#else\n  (void)map_a;")],
           "[step6][perf]", "the speed bar's problem, against cuBLAS"),
    # Step 6. One stage: each tile is loaded, then computed, with no copy in flight during
    # the math. Right results and every barrier in place, and 0.86 of cuBLAS on the H200,
    # above correct two-stage tiles: the kernel's shared memory against its boxes sees it.
    Mutant("one stage (each tile's boxes awaited before its math, none in flight during it)",
           [("using TmaTiles      = Tiles<128, 256, 256,  64, 64,  8, 16, 32,  4,      1>;",
             "using TmaTiles      = Tiles<128, 256, 256,  64, 64,  8, 16, 32,  1,      1>;"),
            ("using TmaSmallTiles = Tiles<128, 128, 256, 64, 32, 8, 8, 32, 3, 2>;",
             "using TmaSmallTiles = Tiles<128, 128, 256, 64, 32, 8, 8, 32, 1, 2>;"),
            ("constexpr int kFewStages = 2;\n", "constexpr int kFewStages = 1;\n")],
           "[step6][mechanism]", "Give the pipeline two or more stages"),
    # Step 6. The byte count in the wrong unit: kStageBytes is already bytes. The phase
    # waits for 4 x the bytes the two boxes deliver and never completes; the bounded wait
    # gives up after 4 s with its message and traps (a sticky error: the case runs alone).
    Mutant("expect-tx of 4 x the stage's bytes (the full phase never completes: the wait gives up)",
           [("    mbarrier_arrive_expect_tx(&full[s], kStageBytes);\n",
             "    mbarrier_arrive_expect_tx(&full[s], kStageBytes * 4u);  // 4 bytes a float\n")],
           "[step6][correctness]", "the full barrier of stage 0 did not complete in 4 s"),
    # Step 6, the watchdog's case: the same byte count with a wait loop of one's own, with
    # no bound. The kernel never ends; the supervisor kills the case at the case timeout
    # (60 s, --case-timeout) and names step 6, and steps 1-5 still report.
    Mutant("a wait loop of one's own on a phase that never completes (hang)",
           [("    mbarrier_arrive_expect_tx(&full[s], kStageBytes);\n",
             "    mbarrier_arrive_expect_tx(&full[s], kStageBytes * 4u);  // 4 bytes a float\n"),
            ("    wait_phase(&full[stage], parity, true, stage);\n",
             "    while (!mbarrier_try_wait_parity(&full[stage], parity)) {\n    }\n")],
           "[step6]", "the kernel of step 6 never finished", whole=True),
    # Step 6. B's box given as (columns, rows), not (rows, columns): a valid map of 128 rows
    # of k by 32 columns, the same bytes (so the phase completes), laid out where the
    # kernel expects 32 rows of 128.
    Mutant("B's box dimensions swapped (128 rows x 32 columns)",
           [("    map_b = tensor_map(b.data, k, n, b.ld, T::kBK, T::kBlockN, CU_TENSOR_MAP_SWIZZLE_NONE);\n",
             "    map_b = tensor_map(b.data, k, n, b.ld, T::kBlockN, T::kBK, CU_TENSOR_MAP_SWIZZLE_NONE);\n")],
           "[step6][correctness]", "wrong everywhere"),
    # Step 6. A's box swapped: 128 floats (512 bytes) a box row, past the 128-byte swizzle's
    # span, which the driver refuses (the wrapper throws with the CUresult).
    Mutant("A's box dimensions swapped (box rows of 512 bytes under the 128-byte swizzle)",
           [("    map_a = tensor_map(a.data, m, k, a.ld, T::kBlockM, T::kBK, CU_TENSOR_MAP_SWIZZLE_128B);\n",
             "    map_a = tensor_map(a.data, m, k, a.ld, T::kBK, T::kBlockM, CU_TENSOR_MAP_SWIZZLE_128B);\n")],
           "[step6][correctness]", "cuTensorMapEncodeTiled refused"),
    # Step 6. The TMA unit swizzled A's rows; the reads do not undo it: piece j of row r
    # is read from piece j, where j ^ (r % 8) lies. Only rows with r % 8 == 0 come out right.
    Mutant("the 128-byte swizzle not undone when reading A",
           [("  const int swizzle = am % 8;\n", "  const int swizzle = 0;\n")],
           "[step6][correctness]", "wrong everywhere"),
    # Step 6. The give-up message printed with arguments: printf passes them through a
    # buffer in local memory, STL in the kernel's SASS.
    Mutant("the wait's give-up message printed with arguments (a local-memory buffer)",
           [('  static_assert(TmaTiles::kStages <= 4 && TmaSmallTiles::kStages <= 4, "one message per stage below");\n'
             "  switch (stage) {\n"
             '    case 0: full ? CH09_GAVE_UP("full", 0) : CH09_GAVE_UP("empty", 0); break;\n'
             '    case 1: full ? CH09_GAVE_UP("full", 1) : CH09_GAVE_UP("empty", 1); break;\n'
             '    case 2: full ? CH09_GAVE_UP("full", 2) : CH09_GAVE_UP("empty", 2); break;\n'
             '    default: full ? CH09_GAVE_UP("full", 3) : CH09_GAVE_UP("empty", 3); break;\n'
             "  }\n",
             '  printf("sgemm_tma_kernel: the %s barrier of stage %d did not complete in 4 s\\n", full ? "full" : "empty",\n'
             "         stage);\n")],
           "[step6][mechanism]", "went to local memory"),
    # Step 6. No proxy fence after the barrier inits: right on these GPUs, outside the PTX
    # memory model; only the PTX check sees it.
    Mutant("no proxy fence after the mbarrier inits of step 6",
           [("      mbarrier_init(&empty[s], kConsumers);\n    }\n    fence_proxy_async_shared();\n",
             "      mbarrier_init(&empty[s], kConsumers);\n    }\n")],
           "[step6][mechanism]", "is not followed by fence.proxy.async or fence.mbarrier_init"),
    # Issue 26: a launch on another stream than the one given (the trace shows where it ran).
    Mutant("sgemm_tiled on the legacy stream",
           [("  sgemm_tiled_kernel<<<tile_blocks(m, n, kTile, kTile), dim3(kTile, kTileRows), 0, stream>>>(",
             "  (void)stream;\n  sgemm_tiled_kernel<<<tile_blocks(m, n, kTile, kTile), dim3(kTile, kTileRows), 0, 0>>>(")],
           "[step1][mechanism]", "on the legacy default stream"),
    Mutant("sgemm_tma on the per-thread default stream",
           [("                             stream>>>(map_a, map_b, c.data, c.ld, c.rows, c.cols, k);",
             "                             cudaStreamPerThread>>>(map_a, map_b, c.data, c.ld, c.rows, c.cols, k);\n  (void)stream;")],
           "[step6][mechanism]", "ran on another stream than the one it was given"),
    # Issue 38's second read (2026-12-06): every thread arrives on the empty barrier, 256 a
    # stage; it clears both step-6 speed bars (0.90 of cuBLAS), the PTX's counts show it.
    Mutant("every thread arrives on the empty barrier (256 arrivals a stage, not 8)",
           [("  constexpr unsigned kConsumers = T::kThreads / 32;\n",
             "  constexpr unsigned kConsumers = T::kThreads;\n"),
            ("    __syncwarp();                                   // every lane of this warp has read the stage...\n"
             "    if (lane == 0) mbarrier_arrive(&empty[stage]);  // ...and one arrival says so\n",
             "    mbarrier_arrive(&empty[stage]);  // this thread has read the stage\n")],
           "[step6][mechanism]", "count one arrival per warp"),
    # Lane 0 arrives for its warp without the lanes meeting first: the results are expected to
    # stay right (the lanes run nearly together); the PTX memory model promises nothing.
    Mutant("lane 0 arrives on the empty barrier before its warp's lanes met (no __syncwarp)",
           [("    __syncwarp();                                   // every lane of this warp has read the stage...\n",
             "")],
           "[step6][mechanism]", "after its warp's lanes met"),
    # The grouped order's last band clamped to kGroup rows, not to the rows left: wrong only
    # with more than 8 tile rows, not a multiple of 8, and more than one tile column (1100 x 300).
    Mutant("the grouped order's last band clamped to kGroup rows, not to the rows left",
           [("  const int height = min(tiles_m - first, kGroup);\n", "  const int height = min(tiles_m, kGroup);\n")],
           "[step5][correctness]", "never written"),
    # Step 5's A stage rows unpadded (pitch 16 floats): a warp's A fragment loads 4-way.
    Mutant("step 5's A stage rows unpadded (pitch 16 floats: A's fragment loads 4-way)",
           [("constexpr int kAPitch = T::kBK + 4;\n", "constexpr int kAPitch = T::kBK;\n")],
           "[step5][mechanism][profile]", "shared-load wavefronts a warp FFMA"),
    # Step 6's A box not swizzled, in the map and in the reads: 8 rows in one bank group.
    Mutant("step 6's A box not swizzled (8 rows of 128 bytes in one bank group)",
           [("    map_a = tensor_map(a.data, m, k, a.ld, T::kBlockM, T::kBK, CU_TENSOR_MAP_SWIZZLE_128B);\n",
             "    map_a = tensor_map(a.data, m, k, a.ld, T::kBlockM, T::kBK, CU_TENSOR_MAP_SWIZZLE_NONE);\n"),
            ("  const int swizzle = am % 8;\n", "  const int swizzle = 0;\n")],
           "[step6][mechanism][profile]", "shared-load wavefronts a warp FFMA"),
]
