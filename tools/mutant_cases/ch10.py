"""Chapter 10's mutants: see tools/mutants.py. Each is a mistake a learner makes, put back
into the solution; the test named by its tag must fail with the message that names it.
None has run on two GPUs yet (docs/10_multi_gpu.md): `mutants.py 10` on a machine with
two GPUs or more proves them; on one GPU every case skips."""
from . import Mutant

CHAPTER = "10_multi_gpu"

PEER_COPY = ("        CUDA_CHECK(cudaMemcpyPeerAsync(dst, link.dst_device, src, link.src_device, bytes, "
             "link.src_stream));")
DST_WAIT = "  CUDA_CHECK(cudaStreamWaitEvent(link.dst_stream, link.sent, 0));\n"
ENABLE_LOOP = "    for (int j = 0; j < count; ++j) {\n      if (i == j) continue;"
INNER = "      launch_jacobi_rows(s.cur, s.next, cols, 2, s.rows - 1, s.compute);\n"
EDGE_WAITS = ("      for (int n : {d - 1, d, d + 1})\n"
              "        if (n >= 0 && n < count) CUDA_CHECK(cudaStreamWaitEvent(s.edges, slabs[n].done, 0));\n")
RING_WAIT = "    CUDA_CHECK(cudaStreamWaitEvent(ranks[r].stream, ranks[wrap(r - 1, count)].step_done, 0));\n"
RING_PART = "    part(r, ranks[wrap(r - 1, count)]);\n"

MUTANTS = [
    # ---- step 1 -----------------------------------------------------------------------
    # Peer access enabled one way only: the pairs (i, j) with i < j. The matrix then lacks
    # half the pairs the hardware allows.
    Mutant("peer access enabled one way only",
           [(ENABLE_LOOP, "    for (int j = i + 1; j < count; ++j) {")],
           "[step1][correctness]", "your first call enabled"),
    # The "already enabled" answer left as the thread's last error.
    Mutant("a second enable leaves cudaErrorPeerAccessAlreadyEnabled behind",
           [("      if (e == cudaErrorPeerAccessAlreadyEnabled)\n        (void)cudaGetLastError();\n      else\n"
             "        CUDA_CHECK(e);", "      if (e != cudaErrorPeerAccessAlreadyEnabled) CUDA_CHECK(e);")],
           "[step1][correctness]", "must not be left as the thread's last error"),
    # A copy staged through the host although the devices reach each other.
    Mutant("a copy staged through the host although peer access is enabled",
           [("  const bool peer = peers.reaches(link.src_device, link.dst_device) || "
             "peers.reaches(link.dst_device, link.src_device);", "  const bool peer = false;\n  (void)peers;")],
           "[step1][mechanism]", "copies through the host"),
    # The destination's stream not made to wait: work queued there races the copy.
    Mutant("the destination's stream does not wait for the copy",
           [(DST_WAIT, "")],
           "[step1][mechanism]", "the destination's stream did not wait for the copy"),
    # The host waits for the copy instead of the stream.
    Mutant("the host waits for the copy (cudaStreamSynchronize)",
           [(DST_WAIT, "  CUDA_CHECK(cudaStreamSynchronize(link.src_stream));\n" + DST_WAIT)],
           "[step1][mechanism]", "calls that wait for the GPU"),
    # ---- step 2 -----------------------------------------------------------------------
    # One float per thread: 4-byte loads over the link.
    Mutant("add_from_peer one float at a time",
           [("  const std::size_t head =\n      misalign(local) == misalign(remote) && misalign(local) % sizeof(float) == 0"
             " ? std::min(to_boundary, n) : n;", "  const std::size_t head = n;\n  (void)to_boundary;")],
           "[step2][mechanism]", "16-byte loads"),
    # The kernel launched without switching to the stream's device.
    Mutant("add_from_peer launched on the current device, not the stream's",
           [("  const OnDevice on(device);  // a stream's kernels launch on its own device\n", "")],
           "[step2][mechanism]", "launches only once device"),
    # The misalignment ignored: a float4 from an address that is not 16-byte aligned.
    Mutant("add_from_peer assumes 16-byte aligned starts",
           [("  const std::size_t head =\n      misalign(local) == misalign(remote) && misalign(local) % sizeof(float) == 0"
             " ? std::min(to_boundary, n) : n;", "  const std::size_t head = 0;\n  (void)to_boundary;")],
           "[step2][correctness]", "floats"),
    # ---- step 3 -----------------------------------------------------------------------
    # The halo sent after the compute: the inner rows on the edges stream too, before the
    # edges. Right, but the copies wait behind the whole band.
    Mutant("the halo sent after the inner rows",
           [(INNER, ""),
            ("      launch_jacobi_rows(s.cur, s.next, cols, 1, 1, s.edges);\n",
             "      launch_jacobi_rows(s.cur, s.next, cols, 2, s.rows - 1, s.edges);\n"
             "      launch_jacobi_rows(s.cur, s.next, cols, 1, 1, s.edges);\n")],
           "[step3][mechanism]", "ran beside a sweep kernel"),
    # The edges stream does not wait for the sweep before: it reads halos still in flight.
    Mutant("the edges of a sweep start before the sweep before ended",
           [(EDGE_WAITS, "")],
           "[step3][correctness]", "edge row"),
    # A host synchronise per sweep.
    Mutant("a device synchronise after every sweep",
           [("    for (int d = 0; d < count; ++d) std::swap(slabs[d].cur, slabs[d].next);\n",
             "    for (int d = 0; d < count; ++d) {\n      const OnDevice on(slabs[d].device);\n"
             "      CUDA_CHECK(cudaDeviceSynchronize());\n      std::swap(slabs[d].cur, slabs[d].next);\n    }\n")],
           "[step3][mechanism]", "calls that wait for the GPU"),
    # ---- step 4 -----------------------------------------------------------------------
    # A ring step's work on the left rank's stream instead of its own.
    Mutant("a ring step on the wrong stream",
           [("      add_from_peer(ranks[r].data + first, left.data + first, size, ranks[r].device, ranks[r].stream);",
             "      add_from_peer(ranks[r].data + first, left.data + first, size, left.device, left.stream);")],
           "[step4][mechanism]", "its own stream"),
    # No wait for the left rank's step before: a chunk read before it is summed.
    Mutant("a ring step that does not wait for the step before",
           [(RING_WAIT, "")],
           "[step4][correctness]", "a chunk read before"),
    # The all-gather sent through the host.
    Mutant("the all-gather staged through the host",
           [("#include <utility>\n", "#include <utility>\n#include <vector>\n"),
            ("      if (size > 0)\n        CUDA_CHECK(cudaMemcpyPeerAsync(ranks[r].data + first, ranks[r].device, "
             "left.data + first, left.device,\n                                       size * sizeof(float), "
             "ranks[r].stream));",
             "      if (size > 0) {\n        std::vector<float> host(size);\n"
             "        CUDA_CHECK(cudaMemcpy(host.data(), left.data + first, size * sizeof(float), cudaMemcpyDefault));\n"
             "        CUDA_CHECK(cudaMemcpy(ranks[r].data + first, host.data(), size * sizeof(float), "
             "cudaMemcpyDefault));\n      }")],
           "[step4][mechanism]", "calls that wait for the GPU"),
]
