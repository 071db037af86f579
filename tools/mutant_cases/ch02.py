"""Chapter 02's mutants: see tools/mutants.py."""
from . import Mutant

CHAPTER = "02_streams"

MUTANTS = [
    Mutant("null-stream",
     [("const auto stream_of = [&](std::size_t c) { return streams[c % streams.size()]; };",
       "const auto stream_of = [&](std::size_t) { (void)streams; return cudaStream_t{}; };")],
     "[step2][mechanism]", "legacy NULL stream"),
    Mutant("device-sync in the loop",
     [("    if (p.after_chunk) p.after_chunk(c, stream_of(c));",
       "    CUDA_CHECK(cudaDeviceSynchronize());\n    if (p.after_chunk) p.after_chunk(c, stream_of(c));")],
     "[step2][mechanism]", "Something waits inside your loop"),
    Mutant("pageable buffers",
     [("  void* p = nullptr;\n  CUDA_CHECK(cudaMallocHost(&p, count * sizeof(int)));\n  return static_cast<int*>(p);",
       "  return new int[count];"),
      ("void free_host_ints(int* p) { CUDA_CHECK(cudaFreeHost(p)); }", "void free_host_ints(int* p) { delete[] p; }")],
     "[step2][mechanism]", "pageable"),
]
