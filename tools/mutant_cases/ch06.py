"""Chapter 06's mutants: see tools/mutants.py. One per step at least, each a mistake the
chapter teaches, caught by the named step's tests with the message that names it.
SASS of the step 1 and 2 mutants checked with nvcc 13.0 (sm_90) and the pip cuobjdump."""
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
    # Lanes along the rows of M again (the starter's mapping): LDC R, c[0x3][R+imm].
    Mutant("one thread per output value: the lanes read 16 rows of M at once (divergent)",
           [("  const std::int64_t p = static_cast<std::int64_t>(blockIdx.x) * kMixBlock + threadIdx.x;\n"
             "  if (p >= n) return;\n  float v[kChannels];",
             "  const std::int64_t t = static_cast<std::int64_t>(blockIdx.x) * kMixBlock + threadIdx.x;\n"
             "  const std::int64_t p = t / kChannels;\n  const int rr = static_cast<int>(t % kChannels);\n"
             "  if (p >= n) return;\n  if (n > 0) {\n  float a = 0.f;\n#pragma unroll\n"
             "  for (int c = 0; c < kChannels; ++c) a += c_mix[rr * kChannels + c] * in[c * static_cast<std::size_t>(n) + p];\n"
             "  out[rr * static_cast<std::size_t>(n) + p] = a;\n  return;\n  }\n  float v[kChannels];"),
            ("(static_cast<std::int64_t>(n) + kMixBlock - 1) / kMixBlock",
             "(static_cast<std::int64_t>(n) * kChannels + kMixBlock - 1) / kMixBlock")],
           "[step2][mechanism]", "per-thread register"),
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
]
