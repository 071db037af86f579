"""Chapter 07's mutants: see tools/mutants.py. One or more per step, each a mistake the
chapter teaches, caught by the named step's tests with the message that names it. The
solution's steps 3 and 4 share sum_pipelined (a template), so a step-3 mutant changes
step 4's kernel too: its tag runs step 3's tests only."""
from . import Mutant

CHAPTER = "07_memcpy_async"

MUTANTS = [
    # Step 1. Without cg::wait the block computes while LDGSTS are still landing: the sums
    # may still come out right (a warm L2, a small array), racecheck sees the read.
    Mutant("no wait for the tile's copy (read before it landed)",
           [("    cg::memcpy_async(block, tile, job.in + s.first, sizeof(Word) * s.count);\n    cg::wait(block);\n",
             "    cg::memcpy_async(block, tile, job.in + s.first, sizeof(Word) * s.count);\n")],
           "[step1][mechanism]", "never waits for its copies"),
    # Step 1. The same mistake where SASS cannot see it: the wait is there, but after the
    # compute (a wait "for the next copy"). The sums may come out right; racecheck sees it.
    Mutant("the wait after the compute (read before the copy landed)",
           [("    cg::wait(block);\n    acc = compute_tile(tile, s.count, job.compute, acc);\n",
             "    acc = compute_tile(tile, s.count, job.compute, acc);\n    cg::wait(block);\n")],
           "[step1][mechanism]", "racecheck found hazards in sum_cg_kernel"),
    # Step 2. Divergence around the barrier: threads with no word of a short last tile skip
    # their arrival, the phase never completes, the others wait for ever (n = 1: only thread
    # 0 arrives). The watchdog turns it into the step's failure; steps 1, 3, 4 still report.
    Mutant("threads without a word of the short last tile skip the barrier (hang)",
           [("    bar.arrive_and_wait();\n",
             "    if (4 * static_cast<int>(threadIdx.x) < s.count) bar.arrive_and_wait();\n")],
           "[step2]", "the kernel of step 2 never finished", whole=True),
    # Step 3. The wait after the barrier: each thread's consumer_wait covers its own copies
    # only, so a thread reads words another thread's copies are still writing.
    Mutant("the stage's wait after the block barrier (other threads' copies not waited for)",
           [("    pipe.consumer_wait();  // this thread's copies of tile k have landed...\n"
             "    __syncthreads();       // ...and every other thread's too\n",
             "    __syncthreads();\n    pipe.consumer_wait();\n")],
           "[step3][mechanism]", "racecheck found hazards in sum_pipeline_kernel"),
    # Step 3. A missing commit: a thread-scope pipeline's consumer_wait has nothing committed
    # to wait for and returns at once (a block-scope pipeline would wait for ever instead);
    # nvcc then drops the wait too: the SASS has LDGSTS but no LDGDEPBAR and no DEPBAR.
    Mutant("a missing commit (the wait returns at once)",
           [("    pipe.producer_commit();\n  };", "  };")],
           "[step3][mechanism]", "no stage is ever committed"),
    # Step 3. A commit per copy instead of per stage: the stage count differs between
    # threads of a warp (the tail) and from the pipeline's depth, and consumer_wait's "all
    # but the newest stages - 1" no longer means "tile k landed".
    Mutant("a commit per copy, not per stage (the wait counts the wrong groups)",
           [("      cuda::memcpy_async(dst + i, src + i, sizeof(Word), pipe);\n    }\n  } else {",
             "      cuda::memcpy_async(dst + i, src + i, sizeof(Word), pipe);\n      pipe.producer_commit();\n    }\n  } else {"),
            ("      cuda::memcpy_async(dst + i, src + i, sizeof(Word), pipe);\n  }\n}",
             "    {\n      cuda::memcpy_async(dst + i, src + i, sizeof(Word), pipe);\n      pipe.producer_commit();\n    }\n  }\n}")],
           "[step3][correctness]", "a thread read a tile before its copy completed"),
    # Step 3. The power-of-two habit: (slot + 1) & (stages - 1) wraps like a modulo for 1, 2
    # and 4 stages only; at 3 the counter sticks at buffer 2, which tiles 2, 3, 4 ... then
    # share while they are in flight.
    Mutant("a stage index that wraps wrongly ((slot + 1) & (stages - 1))",
           [("return slot + 1 == stages ? 0 : slot + 1;", "return (slot + 1) & (stages - 1);")],
           "[step3][correctness]", "the stage index wraps wrongly"),
    # Step 4. 4-byte copies on the fast path: LDGSTS.E, no .BYPASS.128.
    Mutant("the fast path without aligned_size_t (4-byte copies)",
           [("cuda::memcpy_async(dst + first, src + first, cuda::aligned_size_t<16>(16), pipe);",
             "cuda::memcpy_async(dst + first, src + first, 4 * sizeof(Word), pipe);")],
           "[step4][mechanism]", "cuda::aligned_size_t<16>"),
    # Step 4. "Each thread copies its own 16 bytes, so its wait is enough": the fast path
    # drops the barrier after the wait. compute_tile reads the piece thread t + 128 copied.
    Mutant("no block barrier after the wait on the 16-byte path (another thread's piece read unwaited)",
           [("    __syncthreads();       // ...and every other thread's too\n",
             "    if constexpr (!Fast) __syncthreads();\n")],
           "[step4][mechanism]", "racecheck found hazards in sum_fast_kernel"),
    # Step 4. The same belief for the refill: a thread refills its own piece of a stage while
    # thread t - 128 may still be computing on it.
    Mutant("no block barrier before the refill on the 16-byte path (a piece overwritten while read)",
           [("    __syncthreads();       // every thread is done with this buffer before it is refilled\n",
             "    if constexpr (!Fast) __syncthreads();\n")],
           "[step4][mechanism]", "racecheck found hazards in sum_fast_kernel"),
    # Step 4. A misaligned size on the fast path, rounded up: the array's last partial
    # 16-byte piece is copied whole, reading past in[n - 1] (the sums stay right).
    Mutant("the last partial piece copied as 16 bytes (reads past the end)",
           [("    if (first + 4 <= count) {\n", "    if (first < count) {\n")],
           "[step4][mechanism]", "memcheck found bad accesses by sum_fast_kernel"),
    # Step 4. The same, rounded down: the last 1-3 words are never copied.
    Mutant("the last 1-3 words left out of the fast path",
           [("      for (int i = first; i < count; ++i) cuda::memcpy_async(dst + i, src + i, sizeof(Word), pipe);\n",
             "")],
           "[step4][correctness]", "the short last tile"),
    # Issue 26: the grid is the job's (job.blocks blocks of kThreads), not the work's.
    Mutant("sum_cg launches a block per tile",
           [("  sum_cg_kernel<<<job.blocks, kThreads, 0, stream>>>(job);",
             "  const std::size_t tiles = tile_count(job.n);\n"
             "  sum_cg_kernel<<<static_cast<unsigned>(tiles > 0 ? tiles : 1), kThreads, 0, stream>>>(job);")],
           "[step1][mechanism]", "a block per tile is not the job's grid"),
    Mutant("sum_pipeline launches no block beyond the tile count (no idle block)",
           [("  sum_pipeline_kernel<<<job.blocks, kThreads, shared, stream>>>(job);",
             "  const std::size_t tiles = tile_count(job.n) > 0 ? tile_count(job.n) : 1;\n"
             "  const unsigned blocks = static_cast<unsigned>(tiles < static_cast<std::size_t>(job.blocks) ? tiles : "
             "job.blocks);\n"
             "  sum_pipeline_kernel<<<blocks, kThreads, shared, stream>>>(job);")],
           "[step3][mechanism]", "too few blocks"),
    # Reads past the end of the array (issue 26): each passes the sums (compute_tile counts
    # only the tile's words) and memcheck is not part of every step; the array of the guard
    # tests ends at an unmapped page, so each read faults by itself.
    # Step 1. The short last tile copied as a whole tile.
    Mutant("the short last tile copied whole by cg::memcpy_async (reads past the array)",
           [("    cg::memcpy_async(block, tile, job.in + s.first, sizeof(Word) * s.count);\n",
             "    cg::memcpy_async(block, tile, job.in + s.first, sizeof(Word) * kTileWords);\n")],
           "[step1][correctness]", "the short last tile is s.count words, not kTileWords"),
    # Step 2. The same with the barrier's copy.
    Mutant("the short last tile copied whole by cuda::memcpy_async on the barrier (reads past the array)",
           [("cuda::memcpy_async(block, tile, job.in + s.first, sizeof(Word) * s.count, bar);",
             "cuda::memcpy_async(block, tile, job.in + s.first, sizeof(Word) * kTileWords, bar);")],
           "[step2][correctness]", "copy sizeof(Word) * s.count bytes (tile_span) (step 2"),
    # Step 3. The slots past the block's last tile fetched anyway: tile_span of a tile that
    # does not exist is a whole tile past the end (its count wraps round to kTileWords).
    Mutant("slots past the block's last tile fetched anyway (no t < tiles)",
           [("    if (t < tiles) {\n", "    if (true) {\n")],
           "[step3][correctness]", "a fetch of a slot past the block's last tile copies nothing"),
    # Step 3. The unrolled whole-tile loop taken by the short last tile too.
    Mutant("the unrolled whole-tile copy for the short last tile too",
           [("  } else if (count == kTileWords) {\n", "  } else if (count > 0) {\n")],
           "[step3][correctness]", "the short last tile copies its count words only"),
    # Step 4. A thread whose piece lies wholly past the tile's words copies 16 bytes anyway.
    Mutant("16-byte copies of pieces wholly past the end",
           [("    if (first + 4 <= count) {\n", "    if (first + 4 <= count || first >= count) {\n")],
           "[step4][correctness]", "lies wholly past the tile's count words copies nothing"),
    # Issue 26: a launch on another stream than the one given (the trace shows where it ran).
    Mutant("sum_cg on the legacy stream",
           [("  sum_cg_kernel<<<job.blocks, kThreads, 0, stream>>>(job);",
             "  (void)stream;\n  sum_cg_kernel<<<job.blocks, kThreads>>>(job);")],
           "[step1][mechanism]", "on the legacy default stream"),
    Mutant("sum_fast on the per-thread default stream",
           [("  sum_fast_kernel<<<job.blocks, kThreads, shared, stream>>>(job);",
             "  (void)stream;\n  sum_fast_kernel<<<job.blocks, kThreads, shared, cudaStreamPerThread>>>(job);")],
           "[step4][mechanism]", "ran on another stream than the one it was given"),
    # Thread t computes on the piece half a block away, so the next tile's copy overwrites
    # words another thread may still be reading: a write after read that racecheck sees.
    Mutant("no block barrier before the next tile's copy (sum_cg)",
           [("    // The next tile's copy overwrites words other threads may still be reading.\n    block.sync();\n", "")],
           "[step1][mechanism]", "racecheck found hazards in sum_cg_kernel"),
    # The stage from a 64-bit k % stages per tile: a subroutine call in the loop, results right.
    Mutant("the stage buffer from a 64-bit k % stages per tile",
           [("      copy_share<Fast>(stage_buf + fill * kTileWords, job.in + s.first, s.count, pipe);\n",
             "      copy_share<Fast>(stage_buf + (k % stages) * kTileWords, job.in + s.first, s.count, pipe);\n"),
            ("    acc = compute_tile(stage_buf + use * kTileWords, tile_span(job, t).count, job.compute, acc);\n",
             "    acc = compute_tile(stage_buf + (k % stages) * kTileWords, tile_span(job, t).count, job.compute, acc);\n")],
           "[step3][mechanism]", "a division or remainder by a run-time value"),
    # Whole tiles copied by the count-bounded loop: no unrolled branch.
    Mutant("whole tiles copied by the count-bounded loop (not unrolled)",
           [("  } else if (count == kTileWords) {\n", "  } else if (false) {\n")],
           "[step3][perf]", "a whole tile's copies unrolled"),
]
