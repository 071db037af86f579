"""Chapter 08's mutants: see tools/mutants.py. One or more per step, each a mistake the
chapter teaches, caught by the named step's tests with the message that names it. The
solution's steps 2 and 3 share sum_pipelined, and steps 4 and 5 share mbarrier_pipeline (each
a template): a mutant of the shared part changes both kernels, and its tag runs the first
step's tests only.

A sixth step-1 mistake is not here because it cannot be: a call of cp_async<8, Cache::cg> in
the solution fails to compile (with the wrapper's static_assert message, in exercise.cu),
and tools/mutants.py counts a mutant that does not compile as not caught. The compile check
of step 1 puts that call in a probe of its own; the mutant below removes the static_assert,
which the probe then reports."""
from . import Mutant

CHAPTER = "08_cp_async_ptx"

_CG_ASM = ('    asm volatile("cp.async.cg.shared.global [%0], [%1], %2, %3;\\n" ::"r"(shared), "l"(global), '
           '"n"(Bytes),\n')
_CA_ASM = ('    asm volatile("cp.async.ca.shared.global [%0], [%1], %2, %3;\\n" ::"r"(shared), "l"(global), '
           '"n"(Bytes),\n')

REFILL_BARRIER = "    __syncthreads();  // every thread is done with the stage before thread 0 refills it\n"

MUTANTS = [
    # Step 1. The cache hint ignored: .ca for both levels. Every copy still lands (the sums
    # and the copy are right); the .cg kernel compiles to LDGSTS.E.128, cached in L1.
    Mutant("Cache::cg compiled as cp.async.ca (the cache level ignored)",
           [(_CG_ASM, _CA_ASM)],
           "[step1][mechanism]", "want LDGSTS.E.BYPASS.128 only"),
    # Step 1. The generic pointer as the destination, no __cvta_generic_to_shared. It
    # compiles; on sm_90 the generic address's low 32 bits happen to be the .shared one, so
    # the copy may even land. The SASS shows the generic pointer being built (SR_SWINHI).
    Mutant("the generic pointer given as the .shared address (no __cvta_generic_to_shared)",
           [("  const auto shared = static_cast<std::uint32_t>(__cvta_generic_to_shared(dst));\n",
             "  const auto shared = dst;\n"),
            ('::"r"(shared), "l"(global)', '::"l"(shared), "l"(global)'),
            ('::"r"(shared), "l"(global)', '::"l"(shared), "l"(global)')],
           "[step1][mechanism]", "SR_SWINHI"),
    # Step 1. src_bytes taken but not passed: every copy reads all Bytes. The piece where the
    # array ends reads past it (memcheck) and lands garbage, not zeros; no .ZFILL in SASS.
    Mutant("src_bytes not passed to cp.async (no src-size operand: no zero fill)",
           [('    asm volatile("cp.async.ca.shared.global [%0], [%1], %2, %3;\\n" ::"r"(shared), "l"(global), '
             '"n"(Bytes),\n                 "r"(src_bytes)\n',
             '    asm volatile("cp.async.ca.shared.global [%0], [%1], %2;\\n" ::"r"(shared), "l"(global), '
             '"n"(Bytes)\n'),
            ('    asm volatile("cp.async.cg.shared.global [%0], [%1], %2, %3;\\n" ::"r"(shared), "l"(global), '
             '"n"(Bytes),\n                 "r"(src_bytes)\n',
             '    asm volatile("cp.async.cg.shared.global [%0], [%1], %2;\\n" ::"r"(shared), "l"(global), '
             '"n"(Bytes)\n'),
            ("__device__ __forceinline__ void cp_async(void* dst, const void* src, int src_bytes = Bytes) {",
             "__device__ __forceinline__ void cp_async(void* dst, const void* src, [[maybe_unused]] int src_bytes = Bytes) {")],
           "[step1][mechanism]", "your cp_async ignores src_bytes"),
    # Step 1. No static_assert: a .cg of 8 bytes reaches ptxas, which refuses it on a line of
    # a temporary .ptx file. The solution itself compiles (it never asks for one).
    Mutant("no static_assert on the size (ptxas reports it, on a temporary .ptx line)",
           [('  static_assert(C == Cache::cg ? Bytes == 16 : (Bytes == 4 || Bytes == 8 || Bytes == 16),\n'
             '                "cp_async: cp.async.cg copies 16 bytes only; cp.async.ca copies 4, 8 or 16 bytes");\n',
             "")],
           "[step1][compile]", "was refused by ptxas, not by your wrapper"),
    # Step 1. A .cg copy of 8 bytes asked for where the tail is copied: the wrapper's
    # static_assert stops the build on the learner's own line, before ptxas sees it.
    Mutant("a cp.async.cg of 8 bytes (only 16 exists)",
           [("    cp_async<16, Cache::cg>(dst + first, src + (bytes > 0 ? first : 0), bytes);\n",
             "    cp_async<8, Cache::cg>(dst + first, src + (bytes > 0 ? first : 0), bytes);\n")],
           "[step1][compile]", "cp.async.cg copies 16 bytes only", compile_error=True),
    # Step 2. wait_group 0: correct, and nothing overlaps (every committed group waited for).
    Mutant("cp.async.wait_group 0 (waits for the tiles ahead too: no overlap)",
           [("    cp_async_wait<Stages - 1>();", "    cp_async_wait<0>();")],
           "[step2][mechanism]", "so nothing overlaps the compute"),
    # Step 2. wait_group Stages: one group too many may still be in flight: tile k's own.
    Mutant("cp.async.wait_group Stages (tile k's own group may still be in flight)",
           [("    cp_async_wait<Stages - 1>();", "    cp_async_wait<Stages>();")],
           "[step2][mechanism]", "lets tile k's own group still be pending"),
    # Step 2. The wait after the barrier: each thread has waited for its own copies only
    # when the others read them. The SASS and, often, the sums look right; racecheck sees it.
    Mutant("the wait after the block barrier (other threads' copies not waited for)",
           [("    cp_async_wait<Stages - 1>();  // this thread's copies of tile k have landed...\n"
             "    __syncthreads();              // ...and every other thread's\n",
             "    __syncthreads();\n    cp_async_wait<Stages - 1>();\n")],
           "[step2][mechanism]", "racecheck found hazards in sum_pipeline_kernel"),
    # Step 2. Commits only for slots that have a tile: past the block's last tile no groups
    # are committed, so "all but the newest Stages - 1" no longer includes the last tiles.
    Mutant("no commit for an empty slot (the group count differs at the end)",
           [("      copy_share<Fast>(stage_buf + fill * kTileWords, job.in + s.first, s.count);\n    }\n",
             "      copy_share<Fast>(stage_buf + fill * kTileWords, job.in + s.first, s.count);\n"
             "      cp_async_commit();\n    }\n"),
            ("    __syncwarp();\n    cp_async_commit();\n  };", "    __syncwarp();\n  };")],
           "[step2][correctness]", "Commit one group per tile slot, in every thread, also for the slots past"),
    # Step 2. The power-of-two habit: (slot + 1) & (Stages - 1) wraps right for 1, 2 and 4
    # stages only.
    Mutant("a stage index that wraps wrongly ((slot + 1) & (Stages - 1))",
           [("{ return slot + 1 == Stages ? 0 : slot + 1; }", "{ return (slot + 1) & (Stages - 1); }")],
           "[step2][correctness]", "the stage index wraps wrongly"),
    # Step 3. "Each thread copies its own 16 bytes, so its wait_group is enough": the fast
    # path drops the barrier after the wait. compute_tile reads the piece thread t + 128 copied.
    Mutant("no block barrier after the wait on the 16-byte path (another thread's piece read unwaited)",
           [("    __syncthreads();              // ...and every other thread's\n",
             "    if constexpr (!Fast) __syncthreads();\n")],
           "[step3][mechanism]", "racecheck found hazards in sum_fast_kernel"),
    # Step 3. The same belief for the refill: a stage refilled while another thread reads it.
    Mutant("no block barrier before the refill on the 16-byte path (a piece overwritten while read)",
           [("    __syncthreads();  // every thread is done with the stage before it is refilled\n",
             "    if constexpr (!Fast) __syncthreads();\n")],
           "[step3][mechanism]", "racecheck found hazards in sum_fast_kernel"),
    # Step 3. Chapter 07's way: whole pieces 16 bytes, the tail word by word (LDGSTS.E).
    Mutant("the tail by a branch to 4-byte copies (two kinds of copy)",
           [("    cp_async<16, Cache::cg>(dst + first, src + (bytes > 0 ? first : 0), bytes);\n",
             "    if (bytes == 16) {\n"
             "      cp_async<16, Cache::cg>(dst + first, src + first);\n"
             "    } else {\n"
             "      for (int i = 0; 4 * i < bytes; ++i) cp_async<4, Cache::ca>(dst + first + i, src + first + i);\n"
             "    }\n")],
           "[step3][mechanism]", "want LDGSTS.E.BYPASS.128 only"),
    # Step 3. The tail rounded up: a whole 16-byte piece where the array ends inside it. The
    # sums stay right (compute_tile counts `count` words). With src-size only 0 or 16, nvcc
    # emits the all-or-nothing form (no .ZFILL), which the SASS check names; memcheck sees
    # the read past the end too.
    Mutant("the last piece read whole (16 bytes past the array's end)",
           [("    const int bytes = left <= 0 ? 0 : left < 16 ? left : 16;\n",
             "    const int bytes = left <= 0 ? 0 : 16;\n")],
           "[step3][mechanism]", "they either read past it or leave words out"),
    # Step 3. The tail rounded down: the last 1-3 words never copied.
    Mutant("the last piece left out (its 1-3 words never copied)",
           [("    const int bytes = left <= 0 ? 0 : left < 16 ? left : 16;\n",
             "    const int bytes = left < 16 ? 0 : 16;\n")],
           "[step3][correctness]", "arrays ending on a 16-byte piece pass, ragged ones fail"),
    # Step 4. The phase expects the tile's bytes, but the bulk copy moves them rounded down
    # to 16: on the array's last tile the phase never completes. wait_phase gives up.
    Mutant("expect-tx of the tile's bytes, not the bulk copy's (never completes at the tail)",
           [("    mbarrier_arrive_expect_tx(bar, whole);\n", "    mbarrier_arrive_expect_tx(bar, bytes);\n")],
           "[step4][correctness]", "an mbarrier phase never completed"),
    # Step 4. A parity that never flips: from a stage's second use on, the wait asks for the
    # phase before, which has completed, and returns before the tile landed.
    Mutant("a parity that never flips (waits on phase 0 every time)",
           [("static_cast<unsigned>(k / Stages) & 1u", "0u")],
           "[step4][correctness]", "wait for the parity of this use of the barrier"),
    # Step 4. Every thread counted as an arrival, but only thread 0 arrives: no phase ever
    # completes.
    Mutant("the barrier initialised for every thread's arrival (only thread 0 arrives)",
           [("mbarrier_init(&full[s], 1);", "mbarrier_init(&full[s], kThreads);")],
           "[step4][correctness]", "an mbarrier phase never completed"),
    # Step 4. No tail path: the tile's bytes bulk-copied as they are, not a multiple of 16
    # on the array's last tile. PTX leaves it undefined; the test names the 16-byte rule
    # whether the copy faults, never completes, or delivers the wrong words.
    Mutant("the array's last tile bulk-copied whole (a size that is not a multiple of 16)",
           [("whole = bytes & ~15u;", "whole = bytes;")],
           "[step4][correctness]", "a multiple of 16 bytes"),
    # Step 4, the watchdog's case: a wait loop of the learner's own, with no bound, on a phase
    # that never completes. The kernel never ends; the supervisor kills it and names step 4,
    # and steps 1-3 still report (step 5 shares the pipeline and hangs too).
    Mutant("a wait loop of one's own on a phase that never completes (hang)",
           [("mbarrier_init(&full[s], 1);", "mbarrier_init(&full[s], kThreads);"),
            ("    wait_phase(&full[k % Stages], static_cast<unsigned>(k / Stages) & 1u, report, static_cast<int>(k % Stages));\n",
             "    while (!mbarrier_try_wait_parity(&full[k % Stages], static_cast<unsigned>(k / Stages) & 1u)) {\n"
             "    }\n")],
           "[step4]", "the kernel of step 4 never finished", whole=True),
    # Step 5. The phase expects only the box's words inside the matrix; the TMA unit
    # completes the whole box's bytes, zeros included.
    Mutant("expect-tx of the words inside the matrix, not the whole box",
           [("    mbarrier_arrive_expect_tx(bar, kPlanBoxBytes);\n",
             "    mbarrier_arrive_expect_tx(bar, static_cast<unsigned>(b.rows * b.cols) * sizeof(Word));\n")],
           "[step5][correctness]", "expect the whole box"),
    # Step 5. Row and column swapped: TMA's coordinates are innermost first.
    Mutant("the box's coordinates swapped (row first)",
           [("    tensor_load_2d(dst, &map, b.x, b.y, bar);\n", "    tensor_load_2d(dst, &map, b.y, b.x, bar);\n")],
           "[step5][correctness]", "column first"),
    # Step 5. One tile per wait, as in step 4: 4 KiB boxes. Right, and a barrier round trip
    # per 4 KiB keeps the pipeline near 0.8 of the read-only kernel on the H200 (0.92 on the
    # H100, above any bar both GPUs share): the recorded box is what names it.
    Mutant("boxes of 4 rows (4 KiB per barrier wait)",
           [("constexpr TmaPlan kPlan{16, 3};", "constexpr TmaPlan kPlan{4, 3};")],
           "[step5][mechanism]", "whose box brings 8 KiB or more"),
    # Step 5. Past 48 KiB of dynamic shared memory without asking: the 4-stage launch fails.
    Mutant("more than 48 KiB of dynamic shared memory without the opt-in",
           [("    static const bool asked = [] {\n"
             "      CUDA_CHECK(cudaFuncSetAttribute(sum_tma_kernel<kStages>, cudaFuncAttributeMaxDynamicSharedMemorySize, kBytes));\n"
             "      return true;\n"
             "    }();\n"
             "    (void)asked;\n", "")],
           "[step5][correctness]", "48 KiB"),
    # Step 5. The map's checks left to the driver: an unpitched 8191-word row is refused with
    # one CUresult for every rule, not with the rule it breaks.
    Mutant("the row-stride rule left to the driver",
           [("  if (stride % 16 != 0)\n", "  if (false)\n")],
           "[step5][correctness]", "multiple of 16 bytes"),
    # Issue 26: the grid is the job's (job.blocks blocks of kThreads), not the work's.
    Mutant("sum_pipeline launches a block per tile",
           [("    sum_pipeline_kernel<decltype(s)::value><<<job.blocks, kThreads, stage_bytes(job.stages), stream>>>(job);",
             "    const std::size_t tiles = tile_count(job.n) > 0 ? tile_count(job.n) : 1;\n"
             "    sum_pipeline_kernel<decltype(s)::value><<<static_cast<unsigned>(tiles), kThreads, "
             "stage_bytes(job.stages), stream>>>(job);")],
           "[step2][mechanism]", "a block per tile is not the job's grid"),
    Mutant("sum_fast launches no block beyond the tile count (no idle block)",
           [("    sum_fast_kernel<decltype(s)::value><<<job.blocks, kThreads, stage_bytes(job.stages), stream>>>(job);",
             "    const std::size_t tiles = tile_count(job.n) > 0 ? tile_count(job.n) : 1;\n"
             "    const unsigned blocks = static_cast<unsigned>(tiles < static_cast<std::size_t>(job.blocks) ? tiles : "
             "job.blocks);\n"
             "    sum_fast_kernel<decltype(s)::value><<<blocks, kThreads, stage_bytes(job.stages), stream>>>(job);")],
           "[step3][mechanism]", "too few blocks"),
    Mutant("sum_tma launches a block per box",
           [("    sum_tma_kernel<kStages><<<job.blocks, kThreads, kBytes, stream>>>(map, job);",
             "    const std::size_t boxes = box_count(job.in, kPlan.box_rows) > 0 ? box_count(job.in, kPlan.box_rows) : 1;\n"
             "    sum_tma_kernel<kStages><<<static_cast<unsigned>(boxes), kThreads, kBytes, stream>>>(map, job);")],
           "[step5][mechanism]", "a block per box is not the job's grid"),
    # Step 2. The fetch fills the stage being computed (the loop's `use`, not `fill`): the wait
    # count is right, and the sums are wrong from 2 stages on. The advice must say which
    # stage to fill, not talk about the wait count (issue 26).
    Mutant("the fetch fills the stage being computed (use, not fill)",
           [("      copy_share<Fast>(stage_buf + fill * kTileWords, job.in + s.first, s.count);\n",
             "      copy_share<Fast>(stage_buf + use * kTileWords, job.in + s.first, s.count);\n")],
           "[step2][correctness]", "never stage k % stages, which this iteration computes on"),
    # Reads past the end of the array (issue 26): the sums stay right, and the array of the
    # guard tests ends at an unmapped page, so each read faults by itself. (A zero-byte copy
    # pointed past the end is no such read: on the H200 and the H100 it neither faulted nor
    # changed a sum, and memcheck was silent; docs/08.)
    # Step 2. Slots past the block's last tile fetched anyway: a whole tile past the end.
    Mutant("slots past the block's last tile fetched anyway (no t < tiles)",
           [("    if (t < tiles) {\n", "    if (true) {\n")],
           "[step2][correctness]", "a slot past the block's last tile copies nothing (t < tiles)"),
    # Step 2. The unrolled whole-tile loop taken by the short last tile too.
    Mutant("the unrolled whole-tile copy for the short last tile too",
           [("  } else if (count == kTileWords) {\n", "  } else if (count > 0) {\n")],
           "[step2][correctness]", "the short last tile copies its count words only (step 2"),
    # Step 4. Every tile bulk-copied as 4 KiB, the short last one too (and expected so).
    Mutant("the short last tile bulk-copied as a whole tile",
           [("whole = bytes & ~15u;", "whole = static_cast<unsigned>(kTileBytes);")],
           "[step4][correctness]", "not a whole tile's 4 KiB"),
    # Steps 4-5 (the shared mbarrier pipeline). No proxy fence after the barrier inits: the
    # sums stay right on these GPUs, but the PTX memory model does not promise the copies'
    # completions see the init. Only the PTX check sees it (step 4's kernel first).
    Mutant("no proxy fence after the mbarrier inits",
           [("    for (int s = 0; s < Stages; ++s) mbarrier_init(&full[s], 1);\n    fence_proxy_async_shared();\n",
             "    for (int s = 0; s < Stages; ++s) mbarrier_init(&full[s], 1);\n")],
           "[step4][mechanism]", "is not followed by fence.proxy.async or fence.mbarrier_init"),
    # The fence before the inits instead of after: the same hazard, the fence in the code.
    Mutant("the proxy fence before the mbarrier inits, not after",
           [("    for (int s = 0; s < Stages; ++s) mbarrier_init(&full[s], 1);\n    fence_proxy_async_shared();\n",
             "    fence_proxy_async_shared();\n    for (int s = 0; s < Stages; ++s) mbarrier_init(&full[s], 1);\n")],
           "[step4][mechanism]", "is not followed by fence.proxy.async or fence.mbarrier_init"),
    # Issue 26: a launch on another stream than the one given (the trace shows where it ran).
    Mutant("sum_pipeline on the legacy stream",
           [("    sum_pipeline_kernel<decltype(s)::value><<<job.blocks, kThreads, stage_bytes(job.stages), stream>>>(job);",
             "    sum_pipeline_kernel<decltype(s)::value><<<job.blocks, kThreads, stage_bytes(job.stages), 0>>>(job);"),
            ("void sum_pipeline(const Job& job, cudaStream_t stream) {\n",
             "void sum_pipeline(const Job& job, cudaStream_t stream) {\n  (void)stream;\n")],
           "[step2][mechanism]", "on the legacy default stream"),
    Mutant("sum_tma on the per-thread default stream",
           [("    sum_tma_kernel<kStages><<<job.blocks, kThreads, kBytes, stream>>>(map, job);",
             "    sum_tma_kernel<kStages><<<job.blocks, kThreads, kBytes, cudaStreamPerThread>>>(map, job);"),
            ("void sum_tma(const MatrixJob& job, cudaStream_t stream) {\n",
             "void sum_tma(const MatrixJob& job, cudaStream_t stream) {\n  (void)stream;\n")],
           "[step5][mechanism]", "ran on another stream than the one it was given"),
    # ---- Issue 38's second read (2026-12-06) ----
    # The TMA kernel's refill barrier dropped ('the mbarrier orders it'): the copy lands long
    # after the other warps' reads, and racecheck does not see a TMA copy's writes.
    Mutant("the TMA kernel's refill barrier dropped ('the mbarrier orders it'), step 5 only",
           [(REFILL_BARRIER,
             "    if constexpr (StageWords == kTileWords) __syncthreads();  // boxes: the mbarrier orders them\n")],
           "[step5][mechanism]", "block barriers (BAR.SYNC)"),
    # No block barrier after the mbarrier inits (the proxy fence kept): other warps may wait on
    # a barrier thread 0 has not initialised yet; it usually holds.
    Mutant("no __syncthreads after the mbarrier inits (the proxy fence kept)",
           [("    fence_proxy_async_shared();\n  }\n  __syncthreads();\n",
             "    fence_proxy_async_shared();\n  }\n")],
           "[step4][mechanism]", "block barriers (BAR.SYNC)"),
    # Chapter 07's habit: the stage as a 64-bit k % job.stages, a subroutine call per tile.
    Mutant("the stage as a 64-bit k % job.stages (a run-time division per tile), steps 2-3",
           [("      copy_share<Fast>(stage_buf + fill * kTileWords, job.in + s.first, s.count);\n",
             "      copy_share<Fast>(stage_buf + k % static_cast<std::size_t>(job.stages) * kTileWords, job.in + s.first,\n"
             "                       s.count);\n"),
            ("    acc = compute_tile(stage_buf + use * kTileWords, tile_span(job, t).count, job.compute, acc);\n",
             "    acc = compute_tile(stage_buf + k % static_cast<std::size_t>(job.stages) * kTileWords,\n"
             "                       tile_span(job, t).count, job.compute, acc);\n")],
           "[step2][mechanism]", "a division or remainder by a run-time value"),
    # The map's 16-byte alignment rule left to the driver (a bare CUresult, not the rule).
    Mutant("the 16-byte alignment rule of the map left to the driver",
           [("  if (reinterpret_cast<std::uintptr_t>(m.data) % 16 != 0)\n", "  if (false)\n")],
           "[step5][correctness]", "global address 16-byte aligned"),
    # The tail's cp.async not waited for before the arrival that publishes the tile.
    Mutant("the tail's cp.async not waited for before the arrival that publishes the tile",
           [("      cp_async_wait_all();\n    }\n    mbarrier_arrive_expect_tx(bar, whole);\n",
             "    }\n    mbarrier_arrive_expect_tx(bar, whole);\n")],
           "[step4][correctness]", "ragged ones fail"),
    # The parity of the k-th tile, not of the k-th use of its barrier.
    Mutant("the parity of the k-th tile (k & 1), not of the k-th use of its barrier",
           [("static_cast<unsigned>(k / Stages) & 1u", "static_cast<unsigned>(k) & 1u")],
           "[step4][correctness]", "(k / stages) & 1"),
    # The refill barrier dropped from both mbarrier pipelines.
    Mutant("the refill barrier dropped from both mbarrier pipelines",
           [(REFILL_BARRIER, "")],
           "[step4][mechanism]", "block barriers (BAR.SYNC)"),
    # The hint's "try 8, 16, 32" taken to 32-row boxes: 4 stages of 32 KiB are over the 99 KiB
    # an sm_120 GPU gives a block (it runs on an H100).
    Mutant("boxes of 32 rows x 3 stages (4 stages over sm_120's 99 KiB a block)",
           [("constexpr TmaPlan kPlan{16, 3};", "constexpr TmaPlan kPlan{32, 3};")],
           "[step5][correctness]", "a smaller box"),
]
