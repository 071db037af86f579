"""Chapter 06's mutants: see tools/mutants.py. One per step at least, each a mistake the
chapter teaches, caught by the named step's tests with the message that names it.
SASS of the step 1 and 2 mutants checked with nvcc 13.0 (sm_90) and the pip cuobjdump, on
each mutant's build. The speed bars' mistake side:
`python3 tools/mutants.py 06 --only "not unrolled"` leaves that mutant built in
build-mutants/build, whose `tests/test_ch06_learner "[.measure]"` times it against the ring."""
from . import Mutant

CHAPTER = "06_memory_spaces"

MUTANTS = [
    # The shift loop left rolled: its index k is a run-time value again, and the window goes
    # back to a 128-byte stack frame (nvcc 13.0: 128 bytes, 20 LDL/STL).
    Mutant("the shift register's loop not unrolled (run-time index: local memory)",
           [("#pragma unroll\n    for (int k = kTaps - 1; k > 0; --k)",
             "#pragma unroll 1\n    for (int k = kTaps - 1; k > 0; --k)")],
           "[step1][mechanism]", "stack frame"),
    Mutant("the window not filled from the rows above the segment",
           [("for (int r = max(0, r0 - (kTaps - 1)); r < end; ++r) {\n#pragma unroll\n    for (int k = kTaps - 1",
             "for (int r = r0; r < end; ++r) {\n#pragma unroll\n    for (int k = kTaps - 1")],
           "[step1][correctness]", "at the start of a segment"),
    # The mixing loop over the channels left rolled: v[c] with a run-time c cannot live in
    # registers (16 LDL and 4 STL, sm_90, nvcc 13.0); the reads of M stay uniform
    # (c[0x3][UR...]) and the results right, so only the local-memory check sees it.
    Mutant("the channel loop of the mix left rolled (v[c] indexed at run time: local memory)",
           [("#pragma unroll\n    for (int c = 0; c < kChannels; ++c) acc += c_mix[r * kChannels + c] * v[c];\n",
             "#pragma unroll 1\n    for (int c = 0; c < kChannels; ++c) acc += c_mix[r * kChannels + c] * v[c];\n")],
           "[step2][mechanism]", "mix_constant_kernel uses local memory"),
    # Lanes along the rows of M again (the starter's mapping, device.cuh's mix_one_value, which
    # the solution includes for copy_to_constant): LDC R, c[0x3][R+imm].
    Mutant("one thread per output value: the lanes read 16 rows of M at once (divergent)",
           [("  const std::int64_t p = static_cast<std::int64_t>(blockIdx.x) * kMixBlock + threadIdx.x;\n"
             "  if (p >= n) return;\n  float v[kChannels];",
             "  if (n > 0) {\n    mix_one_value(in, c_mix, out, n);\n    return;\n  }\n"
             "  const std::int64_t p = static_cast<std::int64_t>(blockIdx.x) * kMixBlock + threadIdx.x;\n"
             "  if (p >= n) return;\n  float v[kChannels];"),
            ("  const auto blocks = static_cast<unsigned>((static_cast<std::int64_t>(n) + kMixBlock - 1) / kMixBlock);\n"
             "  mix_constant_kernel<<<blocks, kMixBlock, 0, stream>>>(in, out, n);",
             "  mix_constant_kernel<<<mix_value_blocks(n), kMixValueBlock, 0, stream>>>(in, out, n);")],
           "[step2][mechanism]", "per-thread register"),
    # One thread per pixel, but the grid rounded down: the last n % 256 pixels get no thread
    # (and n < 256 no block at all: a launch error, after the larger sizes have failed).
    Mutant("the grid rounds down: the last pixels get no thread",
           [("(static_cast<std::int64_t>(n) + kMixBlock - 1) / kMixBlock",
             "static_cast<std::int64_t>(n) / kMixBlock")],
           "[step2][correctness]", "does every pixel get a thread"),
    Mutant("clamp addressing (edge pixels repeated instead of 0 outside)",
           [("  tex.addressMode[0] = cudaAddressModeBorder;\n  tex.addressMode[1] = cudaAddressModeBorder;",
             "  tex.addressMode[0] = cudaAddressModeClamp;\n  tex.addressMode[1] = cudaAddressModeClamp;")],
           "[step3][mechanism]", "clamp repeats the edge pixels"),
    Mutant("point filtering (nearest pixel, no blend)",
           [("  tex.filterMode = cudaFilterModeLinear;", "  tex.filterMode = cudaFilterModePoint;")],
           "[step3][mechanism]", "cudaFilterModeLinear"),
    Mutant("the hand-written version's half-pixel shift kept (texel centres are at i + 0.5)",
           [("  const float sx = cos_a * dx + sin_a * dy + 0.5f * img.width;\n"
             "  const float sy = -sin_a * dx + cos_a * dy + 0.5f * img.height;",
             "  const float sx = cos_a * dx + sin_a * dy + 0.5f * img.width - 0.5f;\n"
             "  const float sy = -sin_a * dx + cos_a * dy + 0.5f * img.height - 0.5f;")],
           "[step3][correctness]", "pixel centres are at i + 0.5"),
    # Issue 26: grids the results do not show (the extra threads find no pixel), caught by
    # the launch's record at a size where they differ from the contract's.
    Mutant("the starter's launch kept: one thread per output value (16x too many blocks)",
           [("  const auto blocks = static_cast<unsigned>((static_cast<std::int64_t>(n) + kMixBlock - 1) / kMixBlock);\n"
             "  mix_constant_kernel<<<blocks, kMixBlock, 0, stream>>>(in, out, n);",
             "  mix_constant_kernel<<<mix_value_blocks(n), kMixValueBlock, 0, stream>>>(in, out, n);")],
           "[step2][mechanism]", "too many blocks"),
    Mutant("a block too many (n / B + 1 instead of rounding up)",
           [("(static_cast<std::int64_t>(n) + kMixBlock - 1) / kMixBlock",
             "static_cast<std::int64_t>(n) / kMixBlock + 1")],
           "[step2][mechanism]", "too many blocks"),
    Mutant("fir_grid given cols and rows swapped",
           [("fir_registers_kernel<<<fir_grid(rows, cols), kFirBlock, 0, stream>>>",
             "fir_registers_kernel<<<fir_grid(cols, rows), kFirBlock, 0, stream>>>")],
           "[step1][mechanism]", "the grid is fir_grid"),
    Mutant("rotate_grid given height and width swapped",
           [("rotate_texture_kernel<<<rotate_grid(img.width, img.height),",
             "rotate_texture_kernel<<<rotate_grid(img.height, img.width),")],
           "[step3][mechanism]", "every rotation launches rotate_grid"),
    # Issue 26: a launch on another stream than the one given (the trace shows where it ran).
    Mutant("fir_registers on the legacy stream",
           [("  fir_registers_kernel<<<fir_grid(rows, cols), kFirBlock, 0, stream>>>(in, out, rows, cols, taps);",
             "  (void)stream;\n  fir_registers_kernel<<<fir_grid(rows, cols), kFirBlock>>>(in, out, rows, cols, taps);")],
           "[step1][mechanism]", "on the legacy default stream"),
    Mutant("rotate_texture on the per-thread default stream",
           [("dim3(kRotateBlockX, kRotateBlockY), 0, stream>>>(", "dim3(kRotateBlockX, kRotateBlockY), 0, cudaStreamPerThread>>>("),
            ("  if (img.width <= 0 || img.height <= 0) return;\n  float c = 0, s = 0;\n",
             "  (void)stream;\n  if (img.width <= 0 || img.height <= 0) return;\n  float c = 0, s = 0;\n")],
           "[step3][mechanism]", "ran on another stream than the one it was given"),
    # Issue 26: loads past the end of `in` whose values are never stored, so every result
    # is right; only an input that ends at an unmapped page shows them.
    Mutant("the last segment reads rows past the image (the store checked, the load not)",
           [("  const int end = min(rows, r0 + kSegment);\n", "  const int end = r0 + kSegment;\n"),
            ("    out[static_cast<std::size_t>(r) * cols + c] = acc;\n",
             "    if (r < rows) out[static_cast<std::size_t>(r) * cols + c] = acc;\n")],
           "[step1][correctness]", "loaded past in's last element"),
    Mutant("mix_constant computes past the last pixel, only its stores checked",
           [("  if (p >= n) return;\n  float v[kChannels];\n", "  float v[kChannels];\n"),
            ("    out[r * static_cast<std::size_t>(n) + p] = acc;\n",
             "    if (p < n) out[r * static_cast<std::size_t>(n) + p] = acc;\n")],
           "[step2][correctness]", "loaded past in's last element"),
    # Issue 38's second read (2026-12-06). The window's fill not clamped at row 0: rows
    # -31 .. -1 read before in[0] (GuardedInput's NaN bytes there make the result show it).
    Mutant("the window's fill starts at r0 - (kTaps - 1) unclamped: rows -31 .. -1 read before in[0]",
           [("  for (int r = max(0, r0 - (kTaps - 1)); r < end; ++r) {\n",
             "  for (int r = r0 - (kTaps - 1); r < end; ++r) {  // the rows above the segment fill the window\n")],
           "[step1][correctness]", "rows above 0 count as 0"),
    # No window: every output reads its kTaps rows again; no local memory, results exact.
    Mutant("no window: each output reads its kTaps input rows again (no local memory, 32 loads an output)",
           [("  float window[kTaps];\n"
             "#pragma unroll\n"
             "  for (int k = 0; k < kTaps; ++k) window[k] = 0.f;\n"
             "  const int end = min(rows, r0 + kSegment);\n"
             "  for (int r = max(0, r0 - (kTaps - 1)); r < end; ++r) {\n"
             "#pragma unroll\n"
             "    for (int k = kTaps - 1; k > 0; --k) window[k] = window[k - 1];\n"
             "    window[0] = in[static_cast<std::size_t>(r) * cols + c];\n"
             "    if (r < r0) continue;  // the rows above the segment only fill the window\n"
             "    float acc = 0.f;\n"
             "#pragma unroll\n"
             "    for (int k = 0; k < kTaps; ++k) acc += taps.w[k] * window[k];\n",
             "  const int end = min(rows, r0 + kSegment);\n"
             "  for (int r = r0; r < end; ++r) {  // no window to keep: read the kTaps rows of each output\n"
             "    float acc = 0.f;\n"
             "#pragma unroll\n"
             "    for (int k = 0; k < kTaps; ++k)\n"
             "      if (r - k >= 0) acc += taps.w[k] * in[static_cast<std::size_t>(r - k) * cols + c];\n")],
           "[step1][mechanism]", "input rows again"),
    # The pixel index transposed: a bijection, M still read at one address a warp, but every
    # load of in and store of out 32 sectors a request (only the step 2 bar stands; to measure).
    Mutant("mix_constant's pixel index transposed: threadIdx.x * gridDim.x + blockIdx.x (uncoalesced)",
           [("  const std::int64_t p = static_cast<std::int64_t>(blockIdx.x) * kMixBlock + threadIdx.x;\n",
             "  const std::int64_t p = static_cast<std::int64_t>(threadIdx.x) * gridDim.x + blockIdx.x;\n")],
           "[step2][perf]", "the divergent reads"),
    # A wait after the launch: the enqueue-only check sees it.
    Mutant("mix_constant waits for its stream before returning (cudaStreamSynchronize)",
           [("  mix_constant_kernel<<<blocks, kMixBlock, 0, stream>>>(in, out, n);\n  CUDA_CHECK_LAUNCH();\n",
             "  mix_constant_kernel<<<blocks, kMixBlock, 0, stream>>>(in, out, n);\n  CUDA_CHECK_LAUNCH();\n"
             "  CUDA_CHECK(cudaStreamSynchronize(stream));  // M is read before set_mix changes it again\n")],
           "[step2][mechanism]", "made calls that wait for the GPU"),
]
