"""Chapter 04's mutants: see tools/mutants.py."""
from . import Mutant

CHAPTER = "04_coalescing"

VEC_BODY = ("  if (i < groups) {\n"
            "    reinterpret_cast<float4*>(out)[i] = reinterpret_cast<const float4*>(in)[i];\n")
VEC_GRID = "  const std::size_t blocks = (threads + 255) / 256;  // < 2^31 - 1 for any n cudaMalloc can hold\n"
PLAIN_LOOP = ("  for (; i + (kInFlight - 1) * step < n; i += kInFlight * step) {")

MUTANTS = [
    # Step 1.
    Mutant("one block",
     [("copy_coalesced_kernel<<<grid_for(n), 256, 0, stream>>>", "copy_coalesced_kernel<<<1, 256, 0, stream>>>")],
     "[step1][perf]", "want at least"),
    Mutant("the plain grid-stride loop: one load in flight",
     [(PLAIN_LOOP, "  for (; false;) {")], "[step1][perf]", "several loads in flight"),
    Mutant("the copy done by cudaMemcpyAsync",
     [("  copy_coalesced_kernel<<<grid_for(n), 256, 0, stream>>>(in, out, n);\n",
       "  CUDA_CHECK(cudaMemcpyAsync(out, in, n * sizeof(float), cudaMemcpyDeviceToDevice, stream));\n")],
     "[step1][mechanism]", "want one launch of copy_coalesced_kernel"),
    Mutant("exercise.cu includes the solution",
     [('#include "coalescing.cuh"\n', '#include "../../solutions/04_coalescing/exercise.cu"  // the cheat\n#if 0\n'),
      ("}  // namespace ch04\n", "}  // namespace ch04\n#endif\n")],
     "[step1][integrity]", "contains the solution"),
    Mutant("exercise.cu is a copy of the solution",
     [("// Chapter 04 — global memory coalescing. The solution of chapters/04_coalescing/exercise.cu.\n",
       "// Chapter 04 — global memory coalescing. All my own work, honestly.\n")],
     "[step1][integrity]", "contains the solution", keeps_marker=True),
    Mutant("special-cased sizes: stops at 2^20 + 8 floats",
     [("  copy_coalesced_kernel<<<grid_for(n), 256, 0, stream>>>(in, out, n);",
       "  n = n < (std::size_t{1} << 20) + 8 ? n : (std::size_t{1} << 20) + 8;\n"
       "  copy_coalesced_kernel<<<grid_for(n), 256, 0, stream>>>(in, out, n);")],
     "[step1][correctness]", "first mismatch"),
    # Step 2.
    Mutant("float4 built from four float loads",
     [("    reinterpret_cast<float4*>(out)[i] = reinterpret_cast<const float4*>(in)[i];",
       "    reinterpret_cast<float4*>(out)[i] = make_float4(in[4 * i], in[4 * i + 1], in[4 * i + 2], in[4 * i + 3]);")],
     "[step2][mechanism]", "load 16 bytes per instruction"),
    Mutant("float4 loads, float stores",
     [("    reinterpret_cast<float4*>(out)[i] = reinterpret_cast<const float4*>(in)[i];",
       "    const float4 v = reinterpret_cast<const float4*>(in)[i];\n"
       "    out[4 * i] = v.x; out[4 * i + 1] = v.y; out[4 * i + 2] = v.z; out[4 * i + 3] = v.w;")],
     "[step2][mechanism]", "store 16 bytes per instruction"),
    Mutant("no tail",
     [("    if (tail < n) out[tail] = in[tail];", "    (void)tail;")],
     "[step2][correctness]", "tail"),
    # The last partial group read as a whole float4 and stored float by float, each store
    # guarded: results right, and the read runs up to 12 bytes past in[n - 1], inside the
    # allocation's last 16 bytes where no guard page reaches; memcheck knows the size asked
    # of cudaMalloc. (A tail that never uses the fourth float is not seen: under memcheck that
    # read is 12 bytes, though the plain SASS keeps LDG.128 — H100, CUDA 13.0, docs/04.)
    Mutant("the partial last group loaded as a whole float4 (a read past the end inside the last 16 bytes)",
     [("  } else {\n    const std::size_t tail = groups * 4 + (i - groups);\n    if (tail < n) out[tail] = in[tail];\n  }",
       "  } else if (i == groups) {\n"
       "    const float4 v = reinterpret_cast<const float4*>(in)[groups];\n"
       "    const float part[4] = {v.x, v.y, v.z, v.w};\n"
       "#pragma unroll\n"
       "    for (int j = 0; j < 4; ++j)\n"
       "      if (groups * 4 + j < n) out[groups * 4 + j] = part[j];\n"
       "  }")],
     "[step2][mechanism]", "an access past the last of"),
    Mutant("neither a loop nor a covering grid",
     [(VEC_GRID, "  const std::size_t blocks = grid_for(threads);\n")],
     "[step2][correctness]", "past one pass of the grid"),
    Mutant("the checked kernel is not the one that runs",
     [("__global__ void copy_vectorized_kernel(",
       "__global__ void copy_plain(const float* __restrict__ in, float* __restrict__ out, std::size_t n) {\n"
       "  const std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x;\n"
       "  if (i < n) out[i] = in[i];\n}\n\n__global__ void copy_vectorized_kernel("),
      ("  copy_vectorized_kernel<<<static_cast<unsigned>(blocks), 256, 0, stream>>>(in, out, n);",
       "  (void)blocks;\n  copy_plain<<<static_cast<unsigned>((n + 255) / 256), 256, 0, stream>>>(in, out, n);")],
     "[step2][mechanism]", "want one launch of copy_vectorized_kernel"),
    # Step 3.
    Mutant("arrays updated by one block",
     [("advance_soa_kernel<<<grid_for(n), 256, 0, stream>>>", "advance_soa_kernel<<<1, 256, 0, stream>>>")],
     "[step3][perf]", "from every SM"),
    Mutant("one axis forgotten",
     [("    p.z[i] += p.vz[i] * dt;\n", "")], "[step3][correctness]", "z: "),
    # Step 4.
    Mutant("a run of 32 elements per thread",
     [("  for (std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; i < n; i += step)\n"
       "    out[i] = in[i] * factor;",
       "  const std::size_t t = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x;\n"
       "  for (std::size_t first = t * 32; first < n; first += step * 32)\n"
       "    for (std::size_t i = first; i < first + 32 && i < n; ++i) out[i] = in[i] * factor;")],
     "[step4]", "consecutive threads must read consecutive elements"),
    # Issue 26: a launch on another stream than the one given (every reader of `stream`, the
    # readback and the speed bar's events, is then not ordered after the kernel), and grids
    # wrong only where grid_for's cap does not hide them (below one pass of its full grid).
    Mutant("copy_coalesced on the legacy stream",
     [("  copy_coalesced_kernel<<<grid_for(n), 256, 0, stream>>>(in, out, n);\n",
       "  (void)stream;\n  copy_coalesced_kernel<<<grid_for(n), 256>>>(in, out, n);\n")],
     "[step1][mechanism]", "on the legacy default stream"),
    Mutant("copy_vectorized on stream 0",
     [("  copy_vectorized_kernel<<<static_cast<unsigned>(blocks), 256, 0, stream>>>(in, out, n);",
       "  (void)stream;\n  copy_vectorized_kernel<<<static_cast<unsigned>(blocks), 256, 0, 0>>>(in, out, n);")],
     "[step2][mechanism]", "on the legacy default stream"),
    Mutant("advance_soa on the per-thread default stream",
     [("advance_soa_kernel<<<grid_for(n), 256, 0, stream>>>", "advance_soa_kernel<<<grid_for(n), 256, 0, cudaStreamPerThread>>>"),
      ("void advance_soa(ParticlesSoA p, std::size_t n, float dt, cudaStream_t stream) {\n",
       "void advance_soa(ParticlesSoA p, std::size_t n, float dt, cudaStream_t stream) {\n  (void)stream;\n")],
     "[step3][mechanism]", "ran on another stream than the one it was given"),
    Mutant("scale on the legacy stream",
     [("  scale_kernel<<<grid_for(n), 256, 0, stream>>>(in, out, n, factor);",
       "  (void)stream;\n  scale_kernel<<<grid_for(n), 256, 0, cudaStreamLegacy>>>(in, out, n, factor);")],
     "[step4][mechanism]", "on the legacy default stream"),
    Mutant("copy_coalesced's grid sized for float4s (n / 4): a quarter of the threads",
     [("copy_coalesced_kernel<<<grid_for(n), 256, 0, stream>>>", "copy_coalesced_kernel<<<grid_for(n / 4 + 1), 256, 0, stream>>>")],
     "[step1][mechanism]", "too few threads"),
    Mutant("copy_coalesced's grid sized for bytes: 4x too many blocks",
     [("copy_coalesced_kernel<<<grid_for(n), 256, 0, stream>>>",
       "copy_coalesced_kernel<<<grid_for(n * sizeof(float)), 256, 0, stream>>>")],
     "[step1][mechanism]", "too many blocks"),
    Mutant("copy_vectorized's covering grid sized for bytes: 16x too many blocks",
     [(VEC_GRID, "  const std::size_t blocks = (n * sizeof(float) + 255) / 256;  // one thread per byte\n  (void)threads;\n")],
     "[step2][mechanism]", "too many blocks"),
    Mutant("copy_vectorized's covering grid sized for floats: 4x too many blocks",
     [(VEC_GRID, "  const std::size_t blocks = (n + 255) / 256;  // one thread per float\n  (void)threads;\n")],
     "[step2][mechanism]", "too many blocks"),
    Mutant("advance_soa's grid sized for the record's 16 floats: 16x too many blocks",
     [("advance_soa_kernel<<<grid_for(n), 256, 0, stream>>>",
       "advance_soa_kernel<<<grid_for(n * (sizeof(Particle) / sizeof(float))), 256, 0, stream>>>")],
     "[step3][mechanism]", "too many blocks"),
    Mutant("advance_soa's grid sized for n / 3 (a thread per three particles)",
     [("advance_soa_kernel<<<grid_for(n), 256, 0, stream>>>", "advance_soa_kernel<<<grid_for(n / 3 + 1), 256, 0, stream>>>")],
     "[step3][mechanism]", "too few threads"),
    Mutant("scale keeps the starter's grid: a thread per run of 32",
     [("scale_kernel<<<grid_for(n), 256, 0, stream>>>", "scale_kernel<<<grid_for((n + 31) / 32), 256, 0, stream>>>")],
     "[step4][mechanism]", "too few threads"),
    Mutant("scale's grid of 16 blocks per SM's worth, whatever n",
     [("scale_kernel<<<grid_for(n), 256, 0, stream>>>", "scale_kernel<<<2 * grid_for(~std::size_t{0} >> 8), 256, 0, stream>>>")],
     "[step4][mechanism]", "too many blocks"),
    # The watchdog's: without it, the hang would stop the executable at step 1 and the
    # null write would fail every later case with the same sticky error.
    Mutant("hang: the copy's tail loop never advances in block 0",
           [("  for (; i < n; i += step) out[i] = in[i];",
             "  for (; i < n; i += step * blockIdx.x) out[i] = in[i];  // block 0: i never moves")],
           "[step1]", "the kernel of step 1 never finished", whole=True),
    Mutant("illegal address: a field array left null",
           [("  advance_soa_kernel<<<grid_for(n), 256, 0, stream>>>(p, n, dt);",
             "  p.z = nullptr;  // forgotten: the kernel writes through a null pointer\n"
             "  advance_soa_kernel<<<grid_for(n), 256, 0, stream>>>(p, n, dt);")],
           "[step3]", "step 3 hit a sticky CUDA error", whole=True),
    # Issue 26: loads past in[n - 1] whose values are never stored (the input ends at an
    # unmapped page in check_elementwise, so they fault). The unrolled loop run while its
    # first element is inside, the group's loads unchecked, only its stores checked.
    Mutant("the unrolled loop's loads unchecked (only the stores checked)",
           [("  for (; i + (kInFlight - 1) * step < n; i += kInFlight * step) {\n",
             "  for (; i < n; i += kInFlight * step) {\n"),
            ("    for (int u = 0; u < kInFlight; ++u) out[i + u * step] = v[u];\n",
             "    for (int u = 0; u < kInFlight; ++u)\n      if (i + u * step < n) out[i + u * step] = v[u];\n")],
           "[step1][correctness]", "loaded past in's last element"),
    # Issue 38's second read (2026-12-06). A loop that steps by a block, not the grid: every
    # block copies from its first group to the end, the same values again: results right,
    # the array copied once per block.
    Mutant("copy_vectorized loops with a block's stride: every block copies the rest of the array",
           [("  const std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x;\n"
             "  const std::size_t groups = n / 4;\n"
             "  if (i < groups) {\n"
             "    reinterpret_cast<float4*>(out)[i] = reinterpret_cast<const float4*>(in)[i];\n"
             "  } else {\n"
             "    const std::size_t tail = groups * 4 + (i - groups);\n"
             "    if (tail < n) out[tail] = in[tail];\n"
             "  }\n",
             "  const std::size_t groups = n / 4;\n"
             "  const std::size_t first = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x;\n"
             "  for (std::size_t i = first; i < groups; i += blockDim.x)\n"
             "    reinterpret_cast<float4*>(out)[i] = reinterpret_cast<const float4*>(in)[i];\n"
             "  if (first < n % 4) out[groups * 4 + first] = in[groups * 4 + first];\n"),
            (VEC_GRID, "  const std::size_t blocks = grid_for(n / 4);  // a loop over the groups\n  (void)threads;\n")],
           "[step2]", "each float4 is copied once"),
    # A wait after the launch, "so the copy is done when it returns".
    Mutant("copy_vectorized waits for the device before returning",
           [("  copy_vectorized_kernel<<<static_cast<unsigned>(blocks), 256, 0, stream>>>(in, out, n);\n"
             "  CUDA_CHECK_LAUNCH();\n",
             "  copy_vectorized_kernel<<<static_cast<unsigned>(blocks), 256, 0, stream>>>(in, out, n);\n"
             "  CUDA_CHECK_LAUNCH();\n  CUDA_CHECK(cudaDeviceSynchronize());\n")],
           "[step2][mechanism]", "made calls that wait for the GPU"),
    # Four consecutive floats per thread: the lanes of a warp 16 bytes apart in every load.
    Mutant("copy_coalesced: four consecutive floats per thread",
           [("  std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x;\n"
             "  for (; i + (kInFlight - 1) * step < n; i += kInFlight * step) {\n",
             "  std::size_t i = (blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x) * kInFlight;\n"
             "  for (; i + (kInFlight - 1) < n; i += kInFlight * step) {\n"),
            ("v[u] = in[i + u * step];", "v[u] = in[i + u];"),
            ("out[i + u * step] = v[u];", "out[i + u] = v[u];"),
            ("  for (; i < n; i += step) out[i] = in[i];\n", "  for (; i < n; ++i) out[i] = in[i];\n")],
           "[step1][mechanism]", "sectors per load request"),
    # scale's start index transposed: a bijection onto the grid's threads, lanes gridDim.x apart.
    Mutant("scale's start index transposed (threadIdx.x * gridDim.x + blockIdx.x)",
           [("  for (std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; i < n; i += step)\n"
             "    out[i] = in[i] * factor;",
             "  for (std::size_t i = threadIdx.x * static_cast<std::size_t>(gridDim.x) + blockIdx.x; i < n; i += step)\n"
             "    out[i] = in[i] * factor;")],
           "[step4]", "consecutive threads must read consecutive elements"),
    # The odd floats peeled off the front, then float4s from in + n % 4: a misaligned 16-byte
    # access, which faults, and the message says so rather than "past the end".
    Mutant("copy_vectorized peels the n % 4 odd floats off the front (float4s from in + n % 4)",
           [("  if (i < groups) {\n"
             "    reinterpret_cast<float4*>(out)[i] = reinterpret_cast<const float4*>(in)[i];\n"
             "  } else {\n"
             "    const std::size_t tail = groups * 4 + (i - groups);\n"
             "    if (tail < n) out[tail] = in[tail];\n"
             "  }\n",
             "  const std::size_t head = n % 4;\n"
             "  if (i < groups) {\n"
             "    reinterpret_cast<float4*>(out + head)[i] = reinterpret_cast<const float4*>(in + head)[i];\n"
             "  } else if (i - groups < head) {\n"
             "    out[i - groups] = in[i - groups];\n"
             "  }\n")],
           "[step2][correctness]", "A misaligned address"),
    # The tutorials' int index: right for every size but those past 2^31 elements.
    Mutant("copy_coalesced indexes with int (wrong from 2^31 elements on)",
           [("  const std::size_t step = static_cast<std::size_t>(gridDim.x) * blockDim.x;\n"
             "  std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x;\n",
             "  const int step = gridDim.x * blockDim.x;\n"
             "  int i = blockIdx.x * blockDim.x + threadIdx.x;\n")],
           "[step1][correctness]", "wraps past 2^31 - 1"),
]
