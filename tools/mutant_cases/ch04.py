"""Chapter 04's mutants: see tools/mutants.py."""
from . import Mutant

CHAPTER = "04_coalescing"

MUTANTS = [
    Mutant("one block",
     [("copy_coalesced_kernel<<<grid_for(n), 256, 0, stream>>>", "copy_coalesced_kernel<<<1, 256, 0, stream>>>")],
     "[step1][perf]", "want 0.7: launch grid_for"),
    Mutant("float4 built from four float loads",
     [("  const auto* in4 = reinterpret_cast<const float4*>(in);",
       "  const auto in4 = [in](std::size_t g) {\n"
       "    return make_float4(in[4 * g], in[4 * g + 1], in[4 * g + 2], in[4 * g + 3]);\n  };"),
      ("v[u] = in4[i + u * step];", "v[u] = in4(i + u * step);"),
      ("out4[i] = in4[i];", "out4[i] = in4(i);")],
     "[step2][mechanism]", "load float4 through"),
    Mutant("arrays updated by one block",
     [("advance_soa_kernel<<<grid_for(n), 256, 0, stream>>>", "advance_soa_kernel<<<1, 256, 0, stream>>>")],
     "[step3][perf]", "want 1.5x"),
    Mutant("a run of 32 elements per thread",
     [("  for (std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; i < n; i += step)\n"
       "    out[i] = in[i] * factor;",
       "  const std::size_t t = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x;\n"
       "  for (std::size_t first = t * 32; first < n; first += step * 32)\n"
       "    for (std::size_t i = first; i < first + 32 && i < n; ++i) out[i] = in[i] * factor;")],
     "[step4]", "consecutive threads must read consecutive elements"),
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
]
