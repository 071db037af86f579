"""Chapter 02's mutants: see tools/mutants.py. Each is a mistake a learner makes, put back
into the solution; the test named by its tag must fail with the message that names it."""
from . import Mutant

CHAPTER = "02_streams"

DEPTH_LOOP = ("      copy_out(p, k, stream_of(c));\n      done(c);\n")
PLAN_RETURN = "  return Plan{streams, best_chunks, IssueOrder::Depth};"

MUTANTS = [
    # Pinned, but write-combined: the overlap and the results stay right, and every host read
    # of the results goes around the CPU's caches. Only the allocation's flags show it.
    Mutant("host buffers allocated write-combined",
           [("  CUDA_CHECK(cudaMallocHost(&p, count * sizeof(int)));",
             "  CUDA_CHECK(cudaHostAlloc(&p, count * sizeof(int), cudaHostAllocWriteCombined));")],
           "[step1][mechanism]", "write-combined (cudaHostAllocWriteCombined)"),
    # ---- step 1: streams, buffers, a pipeline that only enqueues -------------------------
    Mutant("null-stream",
     [("const auto stream_of = [&](std::size_t c) { return streams[c % streams.size()]; };",
       "const auto stream_of = [&](std::size_t) { (void)streams; return cudaStream_t{}; };")],
     "[step1][mechanism]", "legacy NULL stream"),
    Mutant("all chunks on one stream",
     [("const auto stream_of = [&](std::size_t c) { return streams[c % streams.size()]; };",
       "const auto stream_of = [&](std::size_t) { return streams.front(); };")],
     "[step1][mechanism]", "kernels per stream"),
    # Issue 26: work on another stream than the chunk's, which the kernel-count test above
    # does not see (the same number of kernels per stream, or a memset).
    Mutant("chunk c's copy out on the next chunk's stream",
     [(DEPTH_LOOP, "      copy_out(p, k, stream_of(c + 1));\n      done(c);\n")],
     "[step1][mechanism]", "copy out ran on"),
    Mutant("chunks dealt to the streams in runs (c / S), not round robin (c % S)",
     [("const auto stream_of = [&](std::size_t c) { return streams[c % streams.size()]; };",
       "const auto stream_of = [&](std::size_t c) { return streams[(c / streams.size()) % streams.size()]; };")],
     "[step1][mechanism]", "stream is streams[c % streams.size()]"),
    Mutant("the output cleared first by a memset on the legacy stream",
     [("  chunks = std::max<std::size_t>(1, chunks);\n",
       "  chunks = std::max<std::size_t>(1, chunks);\n"
       "  CUDA_CHECK(cudaMemsetAsync(p.device_out, 0, p.n * sizeof(int)));  // a clean slate\n")],
     "[step1][mechanism]", "1 memset(s) ran on another stream"),
    Mutant("blocking streams",
     [("CUDA_CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));", "CUDA_CHECK(cudaStreamCreate(&s));")],
     "[step1][mechanism]", "create_streams made blocking streams"),
    Mutant("create_streams returns the NULL stream",
     [("  for (auto& s : streams) CUDA_CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));\n", "")],
     "[step1][mechanism]", "returned the default (legacy NULL) stream"),
    Mutant("destroy_streams only forgets them",
     [("  for (cudaStream_t s : streams) CUDA_CHECK(cudaStreamDestroy(s));\n", "")],
     "[step1][mechanism]", "destroy_streams destroyed 0 of the 5"),
    Mutant("pageable buffers",
     [("  void* p = nullptr;\n  CUDA_CHECK(cudaMallocHost(&p, count * sizeof(int)));\n  return static_cast<int*>(p);",
       "  return new int[count];"),
      ("void free_host_ints(int* p) { CUDA_CHECK(cudaFreeHost(p)); }", "void free_host_ints(int* p) { delete[] p; }")],
     "[step1][mechanism]", "allocate_host_ints returned pageable memory"),
    Mutant("free_host_ints leaks",
     [("void free_host_ints(int* p) { CUDA_CHECK(cudaFreeHost(p)); }", "void free_host_ints(int* p) { (void)p; }")],
     "[step1][mechanism]", "free_host_ints made 0 cudaFreeHost"),
    Mutant("free_host_ints with delete[] (mismatched free)",
     [("void free_host_ints(int* p) { CUDA_CHECK(cudaFreeHost(p)); }", "void free_host_ints(int* p) { delete[] p; }")],
     "[step1][mechanism]", "cudaFreeHost"),
    Mutant("device-sync in the loop",
     [(DEPTH_LOOP, "      copy_out(p, k, stream_of(c));\n      CUDA_CHECK(cudaDeviceSynchronize());\n      done(c);\n")],
     "[step1][mechanism]", "calls that wait for the GPU: cudaDeviceSynchronize"),
    # Waits for every other chunk only: half the overlap is left, the call is still a wait.
    Mutant("stream sync every other chunk",
     [(DEPTH_LOOP, "      copy_out(p, k, stream_of(c));\n      if (c % 2 == 1) CUDA_CHECK(cudaStreamSynchronize(stream_of(c - 1)));\n      done(c);\n")],
     "[step1][mechanism]", "calls that wait for the GPU: cudaStreamSynchronize"),
    Mutant("busy-poll with cudaStreamQuery",
     [(DEPTH_LOOP, "      copy_out(p, k, stream_of(c));\n      while (cudaStreamQuery(stream_of(c)) == cudaErrorNotReady) {}\n      done(c);\n")],
     "[step1][mechanism]", "cudaStreamQuery"),
    Mutant("synchronous copy in (no Async)",
     [("  CUDA_CHECK(cudaMemcpyAsync(p.device_in + k.first, p.host_in + k.first, k.count * sizeof(int),\n"
       "                             cudaMemcpyHostToDevice, s));",
       "  (void)s;\n  CUDA_CHECK(cudaMemcpy(p.device_in + k.first, p.host_in + k.first, k.count * sizeof(int),\n"
       "                        cudaMemcpyHostToDevice));")],
     "[step1][mechanism]", "calls that wait for the GPU: cudaMemcpy"),
    # Cheating: the result computed on the host, the GPU only copies.
    Mutant("computes on the host",
     [("void compute(const Problem& p, Chunk k, cudaStream_t s) {\n"
       "  launch_add(p.device_in + k.first, p.device_out + k.first, k.count, p.cycles, p.add_value, s);\n}",
       "void compute(const Problem& p, Chunk k, cudaStream_t s) {\n"
       "  (void)s;\n  for (std::size_t i = k.first; i < k.first + k.count; ++i)\n"
       "    p.host_out[i] = expected(p.host_in[i], p.cycles, p.add_value);\n}"),
      ("void copy_out(const Problem& p, Chunk k, cudaStream_t s) {\n  if (k.count == 0) return;\n",
       "void copy_out(const Problem& p, Chunk k, cudaStream_t s) {\n  if (k.count != 0 || k.count == 0) return;\n")],
     "[step1][mechanism]", "give every chunk its own copy in, kernel and copy out"),
    # ---- step 2: any size, any chunk count, after_chunk -------------------------------
    Mutant("the last elements dropped",
     [("  if (c >= chunks) return n;\n", "  if (c >= chunks) return n - n % chunks;\n")],
     "[step2][correctness]", "every element in exactly one chunk"),
    Mutant("length in elements, not bytes",
     [("  CUDA_CHECK(cudaMemcpyAsync(p.host_out + k.first, p.device_out + k.first, k.count * sizeof(int),",
       "  CUDA_CHECK(cudaMemcpyAsync(p.host_out + k.first, p.device_out + k.first, k.count,")],
     "[step2][mechanism]", "lengths are in bytes"),
    Mutant("after_chunk skipped for empty chunks",
     [("      const Chunk k = chunk_of(c, p.n, chunks);\n", "      const Chunk k = chunk_of(c, p.n, chunks);\n      if (k.count == 0) continue;\n")],
     "[step2][mechanism]", "after_chunk was called"),
    Mutant("after_chunk given the wrong stream",
     [("    if (p.after_chunk) p.after_chunk(c, stream_of(c));", "    if (p.after_chunk) p.after_chunk(c, streams.front());")],
     "[step2][mechanism]", "another stream than chunk c's"),
    Mutant("order ignored (always depth-first)",
     [("  if (order == IssueOrder::Depth) {\n", "  if (order == IssueOrder::Depth || order == IssueOrder::Breadth) {\n")],
     "[step2][mechanism]", "Follow `order`"),
    Mutant("32-bit chunk offsets",
     [("  return n * (2 * c - 1) / (2 * (chunks - 1));",
       "  return static_cast<std::size_t>(static_cast<int>(n * (2 * c - 1) / (2 * (chunks - 1))));")],
     "[step2][correctness]", "need 64 bits"),  # skipped (77) where the GPU has under 21 GiB free
    # ---- step 3: the plan ------------------------------------------------------------
    Mutant("one constant plan (8 x 32 depth-first)",
     [(PLAN_RETURN, "  (void)streams;\n  return Plan{8, 32, IssueOrder::Depth};")],
     "[step3][perf]", "Every chunk costs"),
    # The model without the chunk's fixed cost: more chunks always look better, up to 1024.
    Mutant("the chunk's fixed cost left out of the model",
     [("static_cast<double>(c) * m.chunk_ms;", "static_cast<double>(c) * 0.0;")],
     "[step3][perf]", "Every chunk costs"),
    Mutant("two streams",
     [(PLAN_RETURN, "  (void)streams;\n  return Plan{2, std::max<std::size_t>(best_chunks, 2), IssueOrder::Depth};")],
     "[step3][perf]", "three stages need three chunks in flight"),
    Mutant("8 streams x 32 chunks breadth-first",
     [(PLAN_RETURN, "  (void)streams;\n  return Plan{8, std::max<std::size_t>(best_chunks, 32), IssueOrder::Breadth};")],
     "[step3][perf]", "breadth-first with fewer streams than chunks"),
    # A plan whose chunks never outnumber its streams. On the 256 MiB balanced
    # workload its fill and drain cost about as much as the solution's extra chunks do; on
    # 1 GiB the solution's plan pulls away on the H200 but not far enough on the H100, so
    # step 3's first case asks choose_plan itself for more chunks on a longer problem.
    Mutant("chunks capped at the stream count (8 x 8)",
     [("const std::size_t most = std::min<std::size_t>(n, 1024);",
       "const std::size_t most = std::min<std::size_t>(n, 8);")],
     "[step3]", "no more chunks than streams"),
    Mutant("one chunk per stream, 8 streams",
     [(PLAN_RETURN, "  (void)streams;\n  return Plan{8, std::min<std::size_t>(best_chunks, 8), IssueOrder::Depth};")],
     "[step3]", "no more chunks than streams"),
    # Chunks of a fixed count that ignores the problem's length: right, staged, and as fast
    # as the solution's on the one workload it was tuned for.
    Mutant("a fixed 24 chunks whatever the problem",
     [(PLAN_RETURN, "  (void)streams;\n  return Plan{8, std::min<std::size_t>(n, 24), IssueOrder::Depth};")],
     "[step3]", "a longer problem pays for more chunks"),
    Mutant("never staged",
     [(PLAN_RETURN, "  (void)streams;\n  return Plan{1, 1, IssueOrder::Depth};")],
     "[step3][perf]", "three stages need three chunks in flight"),
    # ---- issue 26: chunk order and the stream each chunk goes to, read from the calls -----
    # Chunks issued stream by stream, after_chunk told a running count (and that count's
    # stream): every chunk is issued, the copies and kernels are right, and after_chunk gets
    # 0, 1, 2, ... in order. Only the order the chunks were issued in is wrong.
    Mutant("chunks issued stream by stream, after_chunk told a running count",
     [("    for (std::size_t c = 0; c < chunks; ++c) {\n      const Chunk k = chunk_of(c, p.n, chunks);\n"
       "      copy_in(p, k, stream_of(c));\n      compute(p, k, stream_of(c));\n"
       "      copy_out(p, k, stream_of(c));\n      done(c);\n    }\n",
       "    std::size_t issued = 0;\n"
       "    for (std::size_t first = 0; first < streams.size(); ++first)\n"
       "      for (std::size_t c = first; c < chunks; c += streams.size()) {\n"
       "        const Chunk k = chunk_of(c, p.n, chunks);\n"
       "        copy_in(p, k, stream_of(c));\n        compute(p, k, stream_of(c));\n"
       "        copy_out(p, k, stream_of(c));\n        done(issued++);\n      }\n")],
     "[step2][mechanism]", "issued in increasing c, chunk 0 first"),
    # after_chunk(c) before chunk c's copy out: the program's breakers would then run before
    # the chunk is wholly issued.
    Mutant("after_chunk called before the chunk's copy out",
     [(DEPTH_LOOP, "      done(c);\n      copy_out(p, k, stream_of(c));\n")],
     "[step2][mechanism]", "copy out(s) were issued after the last after_chunk call"),
    # Chunks dealt to the streams in blocks (chunk c on streams[c * S / chunks]): as many
    # chunks on each stream as round robin gives, so the count per stream passes.
    Mutant("chunks dealt to the streams in blocks",
     [("const auto stream_of = [&](std::size_t c) { return streams[c % streams.size()]; };",
       "const auto stream_of = [&](std::size_t c) { return streams[c * streams.size() / chunks]; };")],
     "[step1][mechanism]", "dealt round robin, not in blocks"),
    # ---- issue 26: per call, not per process -------------------------------------------
    Mutant("create_streams hands out one set kept from the first call",
     [("  std::vector<cudaStream_t> streams(static_cast<std::size_t>(count));\n"
       "  for (auto& s : streams) CUDA_CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));\n"
       "  return streams;\n",
       "  static std::vector<cudaStream_t> made;\n"
       "  while (made.size() < static_cast<std::size_t>(count)) {\n"
       "    cudaStream_t s = nullptr;\n"
       "    CUDA_CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));\n"
       "    made.push_back(s);\n  }\n"
       "  return std::vector<cudaStream_t>(made.begin(), made.begin() + count);\n")],
     "[step1][mechanism]", "streams kept from an earlier call"),
    Mutant("allocate_host_ints hands out one buffer kept from an earlier call",
     [("  void* p = nullptr;\n  CUDA_CHECK(cudaMallocHost(&p, count * sizeof(int)));\n  return static_cast<int*>(p);",
       "  static void* p = nullptr;\n  static std::size_t have = 0;\n  if (count > have) {\n"
       "    if (p != nullptr) CUDA_CHECK(cudaFreeHost(p));\n    CUDA_CHECK(cudaMallocHost(&p, count * sizeof(int)));\n"
       "    have = count;\n  }\n  return static_cast<int*>(p);"),
      ("void free_host_ints(int* p) { CUDA_CHECK(cudaFreeHost(p)); }", "void free_host_ints(int* p) { (void)p; }")],
     "[step1][mechanism]", "one buffer handed out twice"),
    # ---- issue 26: what the kernel reads --------------------------------------------------
    # The kernel reads the pinned input over the bus: the sums are right, the copies in
    # still run (for nothing), and the overlap is still there.
    Mutant("the kernel reads the pinned host input over the bus",
     [("  launch_add(p.device_in + k.first, p.device_out + k.first, k.count, p.cycles, p.add_value, s);",
       "  launch_add(p.host_in + k.first, p.device_out + k.first, k.count, p.cycles, p.add_value, s);")],
     "[step1][mechanism]", "read p.host_in, the pinned host input, over the bus"),
    Mutant("small chunks' kernels read the pinned host input over the bus",
     [("  launch_add(p.device_in + k.first, p.device_out + k.first, k.count, p.cycles, p.add_value, s);",
       "  launch_add((k.count < 4096 ? p.host_in : p.device_in) + k.first, p.device_out + k.first, k.count, p.cycles, "
       "p.add_value, s);")],
     "[step1][mechanism]", "read p.host_in, the pinned host input, over the bus"),
    # Issue 38's second read (2026-12-06): chunks of a fixed 4 MiB, the count from n alone,
    # whatever the phases and each chunk's cost (the model puts it near 0.90 of the bound).
    Mutant("chunks of a fixed 4 MiB whatever the phases and the chunk cost (count from n alone)",
           [("  return Plan{streams, best_chunks, IssueOrder::Depth};",
             "  (void)streams;\n"
             "  const std::size_t sized = std::min<std::size_t>(std::max<std::size_t>(n >> 20, 1), 1024);  // 4 MiB\n"
             "  return Plan{8, sized, IssueOrder::Depth};")],
           "[step3]", "a dearer chunk buys fewer"),
    # The hint's "at least three streams" taken as the count (to measure: the bar may pass it).
    Mutant("exactly three streams (the hint's 'at least three' taken as the count)",
           [("  const int streams = static_cast<int>(std::min<std::size_t>(best_chunks, 8));",
             "  const int streams = static_cast<int>(std::min<std::size_t>(best_chunks, 3));")],
           "[step3][perf]", "want at least"),
]
