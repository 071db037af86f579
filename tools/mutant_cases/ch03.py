"""Chapter 03's mutants: see tools/mutants.py."""
from . import Mutant

CHAPTER = "03_unified_memory"

MUTANTS = [
    Mutant("attached for every stream",
     [("cudaStreamAttachMemAsync(lane.stream, lane.data, 0, cudaMemAttachSingle)",
       "cudaStreamAttachMemAsync(lane.stream, lane.data, 0, cudaMemAttachGlobal)")],
     "[step2][mechanism]", "the attach flag"),
    Mutant("a blocking wait left in",
     [("  signal.wait_for(round);\n}", "  CUDA_CHECK(cudaStreamSynchronize(lane.stream));\n  signal.wait_for(round);\n}")],
     "[step3][mechanism]", "blocking synchronisation"),
    Mutant("no prefetch back to the CPU",
     [("void prefetch_to_cpu(const Lane& lane) {\n  cudaMemLocation host{};\n  host.type = cudaMemLocationTypeHost;\n"
       "  CUDA_CHECK(cudaMemPrefetchAsync(lane.data, lane.n * sizeof(unsigned), host, 0, lane.stream));\n}",
       "void prefetch_to_cpu(const Lane& lane) { (void)lane; }")],
     "[step4][mechanism]", "prefetch the data to the host"),
]
