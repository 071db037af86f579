"""Chapter 03's mutants: see tools/mutants.py. Each puts one mistake back into the
solution's run_lane (or its prefetches) and names the message that must catch it."""
from . import Mutant

CHAPTER = "03_unified_memory"

WAIT = ("    CUDA_CHECK(cudaLaunchHostFunc(lane.stream, RoundSignal::on_gpu_done, &signal));\n"
        "    signal.wait_for(r);\n")
THREAD = ('#include "cml/errors.hpp"\n', '#include "cml/errors.hpp"\n\n#include <chrono>\n#include <thread>\n')
ATTACH = "  CUDA_CHECK(cudaStreamAttachMemAsync(lane.stream, lane.data, 0, cudaMemAttachSingle));\n"
ADVISE = ("    CUDA_CHECK(cudaMemAdvise(table, table_n * sizeof(unsigned), cudaMemAdviseSetReadMostly, "
          "on_device(device)));\n")
# Where run_lane has learnt whether the device can take prefetches (and advice).
CONCURRENT = ("  CUDA_CHECK(cudaDeviceGetAttribute(&concurrent, cudaDevAttrConcurrentManagedAccess, lane.device));\n")
TO_CPU = ("  cudaMemLocation host{};\n  host.type = cudaMemLocationTypeHost;\n"
          "  CUDA_CHECK(cudaMemPrefetchAsync(lane.data, lane.n * sizeof(unsigned), host, 0, lane.stream));\n")
TO_GPU = ("  CUDA_CHECK(cudaMemPrefetchAsync(lane.data, lane.n * sizeof(unsigned), on_device(lane.device), 0, "
          "lane.stream));\n")

MUTANTS = [
    # Step 1: the round and its wait.
    Mutant("no wait: the host steps at once",
           [(WAIT, "    (void)signal;\n")], "[step1]", "still running"),
    Mutant("a short fixed pause instead of a wait",
           [THREAD, (WAIT, "    (void)signal;\n    std::this_thread::sleep_for(std::chrono::milliseconds(20));\n")],
           "[step1]", "still running"),
    Mutant("a fixed pause just over the longest kernel",
           [THREAD, (WAIT, "    (void)signal;\n    std::this_thread::sleep_for(std::chrono::milliseconds(101));\n")],
           "[step1]", "A fixed pause is not a wait"),
    Mutant("waits for the whole device",
           [(WAIT, "    (void)signal;\n    CUDA_CHECK(cudaDeviceSynchronize());\n")], "[step1]", "waits for every lane's stream"),
    Mutant("the GPU step computed on the host",
           [("    launch_gpu_step(lane, r);\n",
             "    for (std::size_t i = 0; i < lane.n; ++i)\n"
             "      lane.data[i] = lane.data[i] * 5u + lane.table[i % lane.table_n] + static_cast<unsigned>(r);\n")],
           "[step1]", "GPU step(s) for"),
    Mutant("host steps in the wrong order",
           [("    host_step(lane, r);\n", "    host_step(lane, rounds - 1 - r);\n")], "[step1]", "in round order"),
    Mutant("exercise.cu includes the solution",
           [('#include "unified_memory.cuh"\n',
             '#include "../../solutions/03_unified_memory/exercise.cu"  // the cheat\n#if 0\n'),
            ("}  // namespace ch03\n", "}  // namespace ch03\n#endif\n")],
           "[step1]", "contains the solution"),
    Mutant("exercise.cu is a copy of the solution",
           [("// Chapter 03 — unified memory with streams. The solution of\n",
             "// Chapter 03 — unified memory with streams. All my own work, honestly; see\n")],
           "[step1]", "contains the solution", keeps_marker=True),
    # Step 2: the attach.
    Mutant("attached for every stream",
           [(ATTACH, ATTACH.replace("cudaMemAttachSingle", "cudaMemAttachGlobal"))],
           "[step2][mechanism]", "the attach flag"),
    Mutant("attached to the per-thread default stream",
           [(ATTACH, ATTACH.replace("(lane.stream,", "(cudaStreamPerThread,"))], "[step2][mechanism]",
           "not to lane.stream"),
    Mutant("attached after the first kernel",
           [(ATTACH, ""),
            ("    launch_gpu_step(lane, r);\n",
             "    launch_gpu_step(lane, r);\n    if (r == 0)\n  " + ATTACH)],
           "[step2][mechanism]", "after the lane's first kernel"),
    Mutant("attached every round",
           [(ATTACH, ""), ("    launch_gpu_step(lane, r);\n", ATTACH.replace("  CUDA", "    CUDA") +
                           "    launch_gpu_step(lane, r);\n")],
           "[step2][mechanism]", "attached lane.data"),
    # Issue 26: the GPU step on another stream than lane.stream (a copy of the lane with a
    # stream of its own): the attach, the moves and the host function stay on lane.stream, so
    # only where the kernel ran shows it.
    Mutant("the GPU step on the per-thread default stream",
           [("    launch_gpu_step(lane, r);\n",
             "    Lane mine = lane;\n    mine.stream = cudaStreamPerThread;  // \"each thread its own stream\"\n"
             "    launch_gpu_step(mine, r);\n")],
           "[step2][mechanism]", "ran on another stream than the one it was given"),
    Mutant("the GPU step on the legacy stream",
           [("    launch_gpu_step(lane, r);\n",
             "    Lane mine = lane;\n    mine.stream = nullptr;\n    launch_gpu_step(mine, r);\n")],
           "[step2][mechanism]", "on the legacy default stream"),
    Mutant("the host function on the per-thread default stream",
           [("cudaLaunchHostFunc(lane.stream,", "cudaLaunchHostFunc(cudaStreamPerThread,")],
           "[step2][mechanism]", "run_lane called cudaLaunchHostFunc on stream"),
    # Step 3: the host function and nothing that blocks.
    Mutant("a blocking wait left in",
           [("    signal.wait_for(r);\n", "    CUDA_CHECK(cudaStreamSynchronize(lane.stream));\n    signal.wait_for(r);\n")],
           "[step3][mechanism]", "blocking or polling"),
    Mutant("busy-polling the stream",
           [(WAIT, "    while (cudaStreamQuery(lane.stream) == cudaErrorNotReady) {}\n"
                   "    RoundSignal::on_gpu_done(&signal);\n")],
           "[step3][mechanism]", "cudaLaunchHostFunc call(s)"),
    Mutant("polling the stream besides the host function",
           [("    signal.wait_for(r);\n",
             "    while (cudaStreamQuery(lane.stream) == cudaErrorNotReady) {}\n    signal.wait_for(r);\n")],
           "[step3][mechanism]", "cudaStreamQuery"),
    Mutant("spinning on the signal",
           [("    signal.wait_for(r);\n", "    while (signal.done() <= r) {}\n")],
           "[step3][mechanism]", "it spins"),
    Mutant("napping and polling the signal",
           [THREAD, ("    signal.wait_for(r);\n",
                     "    while (signal.done() <= r) std::this_thread::sleep_for(std::chrono::microseconds(200));\n")],
           "[step3][mechanism]", "sleeps and looks again"),
    Mutant("host function on the legacy stream",
           [("cudaLaunchHostFunc(lane.stream,", "cudaLaunchHostFunc(0,")],
           "[step3][mechanism]", "another stream than lane.stream"),
    Mutant("host function only in the first round",
           [("    CUDA_CHECK(cudaLaunchHostFunc(lane.stream, RoundSignal::on_gpu_done, &signal));\n",
             "    if (r == 0) CUDA_CHECK(cudaLaunchHostFunc(lane.stream, RoundSignal::on_gpu_done, &signal));\n")],
           "[step3][mechanism]", "round 1 was never signalled"),
    # Step 4: prefetch and advice.
    Mutant("no prefetch back to the CPU",
           [(TO_CPU, "  (void)lane;\n")], "[step4][mechanism]", "faulted the data back"),
    Mutant("no prefetch to the GPU",
           [(TO_GPU, "  (void)lane;\n")], "[step4][mechanism]", "prefetch_to_gpu made 0 prefetch(es) of lane.data"),
    Mutant("prefetch to the GPU on a stream of its own",
           [(TO_GPU, "  static cudaStream_t own = [] { cudaStream_t s; cudaStreamCreateWithFlags(&s, "
                     "cudaStreamNonBlocking); return s; }();\n" + TO_GPU.replace("0, lane.stream)", "0, own)"))],
           "[step4][mechanism]", "another stream than lane.stream"),
    Mutant("prefetch page by page",
           [(TO_GPU, "  for (std::size_t off = 0; off < lane.n * sizeof(unsigned); off += 4096)\n"
                     "    CUDA_CHECK(cudaMemPrefetchAsync(reinterpret_cast<char*>(lane.data) + off, "
                     "std::min<std::size_t>(4096, lane.n * sizeof(unsigned) - off), on_device(lane.device), 0, "
                     "lane.stream));\n")],
           "[step4][perf]", "not page by page"),
    Mutant("prefetch length in elements, not bytes",
           [(TO_CPU, TO_CPU.replace("lane.n * sizeof(unsigned), host", "lane.n, host"))],
           "[step4][mechanism]", "lengths are in bytes"),
    Mutant("a prefetch that waits for itself",
           [(TO_GPU, TO_GPU + "  CUDA_CHECK(cudaStreamSynchronize(lane.stream));\n")],
           "[step4][mechanism]", "It must only enqueue the move"),
    Mutant("the way back sent to the GPU",
           [(TO_CPU, "  CUDA_CHECK(cudaMemPrefetchAsync(lane.data, lane.n * sizeof(unsigned), on_device(lane.device), 0, "
                     "lane.stream));\n")],
           "[step4][mechanism]", "cudaMemLocationTypeHost"),
    Mutant("advice length in elements, not bytes",
           [(ADVISE, ADVISE.replace("table_n * sizeof(unsigned)", "table_n"))],
           "[step4][mechanism]", "lengths are in bytes"),
    Mutant("no advice for the table",
           [("  if (concurrent)\n" + ADVISE, "  if (false)\n" + ADVISE)],
           "[step4][mechanism]", "advise it for that"),
    # The advice moved from the table's owner into run_lane: the same call once per lane,
    # from the lanes' threads.
    Mutant("advises the table in every lane",
           [("  if (concurrent)\n" + ADVISE, "  (void)table;\n  (void)table_n;\n"),
            (CONCURRENT, CONCURRENT + "  if (concurrent)\n" + ADVISE.replace("(table, table_n", "(lane.table, lane.table_n")
             .replace("on_device(device)", "on_device(lane.device)"))],
           "[step4][mechanism]", "want once, by its owner"),
    # ---- issue 26: waits that never return, told apart --------------------------------
    # Round r counted from 1: the first wait is for a round whose GPU step was not launched.
    Mutant("waits for the next round (wait_for(r + 1))",
           [("    signal.wait_for(r);\n", "    signal.wait_for(r + 1);\n")],
           "[step1][correctness]", "counted from 0"),
    # The wait before the host function it waits for is enqueued: it never returns.
    Mutant("waits before enqueueing the host function",
           [(WAIT, "    signal.wait_for(r);\n"
                   "    CUDA_CHECK(cudaLaunchHostFunc(lane.stream, RoundSignal::on_gpu_done, &signal));\n")],
           "[step1][correctness]", "own host function was not enqueued before the wait"),
    # The host function ahead of the kernel: it fires as soon as the prefetch is done, and
    # the host step races the kernel (step 1's check sees it only when the race is lost).
    Mutant("the host function enqueued before the kernel",
           [("    launch_gpu_step(lane, r);\n",
             "    CUDA_CHECK(cudaLaunchHostFunc(lane.stream, RoundSignal::on_gpu_done, &signal));\n"
             "    launch_gpu_step(lane, r);\n"),
            (WAIT, "    signal.wait_for(r);\n")],
           "[step3][mechanism]", "host function was enqueued on lane.stream before that round's kernel"),
    # ---- issue 26: per lane, not per process (several lanes in one process) -------------
    Mutant("the attach done once per process (std::call_once)",
           [(ATTACH, "  static std::once_flag attach_once;\n  std::call_once(attach_once, [&] {\n  " + ATTACH +
             "  });\n")],
           "[step2][mechanism]", "An attach done once per process"),
    Mutant("the attach behind a function-static flag",
           [(ATTACH, "  static bool attached = false;\n  if (!attached) {\n  " + ATTACH + "    attached = true;\n  }\n")],
           "[step2][mechanism]", "covers the first lanes' buffers only"),
    Mutant("the host function's signal kept from the first lane",
           [(WAIT, "    static RoundSignal* const first_signal = &signal;\n"
                   "    CUDA_CHECK(cudaLaunchHostFunc(lane.stream, RoundSignal::on_gpu_done, first_signal));\n"
                   "    signal.wait_for(r);\n")],
           "[step3][mechanism]", "not one kept from an earlier call (a function-static is the first lane's)"),
    Mutant("the host function's stream kept from the first lane",
           [(WAIT, "    static const cudaStream_t first_stream = lane.stream;\n"
                   "    CUDA_CHECK(cudaLaunchHostFunc(first_stream, RoundSignal::on_gpu_done, &signal));\n"
                   "    signal.wait_for(r);\n")],
           "[step3][mechanism]", "enqueued a host function on lane"),
    Mutant("the prefetch's length kept from the first lane",
           [(TO_GPU, "  static const std::size_t bytes = lane.n * sizeof(unsigned);\n"
                     "  CUDA_CHECK(cudaMemPrefetchAsync(lane.data, bytes, on_device(lane.device), 0, lane.stream));\n")],
           "[step4][mechanism]", "the length is this lane's"),
    Mutant("the prefetch's stream kept from the first lane",
           [(TO_GPU, "  static const cudaStream_t stream = lane.stream;\n"
                     "  CUDA_CHECK(cudaMemPrefetchAsync(lane.data, lane.n * sizeof(unsigned), on_device(lane.device), 0, "
                     "stream));\n")],
           "[step4][mechanism]", "a stream kept from an earlier call is another lane's"),
    # ---- issue 26: order inside the stream, read from the calls, not from the race -------
    Mutant("the move back enqueued after the host function",
           [("    if (concurrent) prefetch_to_cpu(lane);\n", ""),
            (WAIT, "    CUDA_CHECK(cudaLaunchHostFunc(lane.stream, RoundSignal::on_gpu_done, &signal));\n"
                   "    if (concurrent) prefetch_to_cpu(lane);\n    signal.wait_for(r);\n")],
           "[step4][mechanism]", "move back to the host was enqueued after the host function"),
    Mutant("the move back enqueued after the host step",
           [("    if (concurrent) prefetch_to_cpu(lane);\n", ""),
            ("    host_step(lane, r);\n", "    host_step(lane, r);\n    if (concurrent) prefetch_to_cpu(lane);\n")],
           "[step4][mechanism]", "move back to the host was enqueued after the host function"),
    Mutant("the move to the GPU enqueued after the kernel",
           [("    if (concurrent) prefetch_to_gpu(lane);\n    launch_gpu_step(lane, r);\n",
             "    launch_gpu_step(lane, r);\n    if (concurrent) prefetch_to_gpu(lane);\n")],
           "[step4][mechanism]", "move to the GPU was enqueued after its kernel"),
    # "Attach every buffer the lane uses": the shared table attached to this lane's stream too.
    # The results stay right on a GPU with concurrentManagedAccess.
    Mutant("the shared table attached to one lane's stream too",
           [(ATTACH, ATTACH + "  CUDA_CHECK(cudaStreamAttachMemAsync(lane.stream, const_cast<unsigned*>(lane.table), 0, "
                              "cudaMemAttachSingle));\n")],
           "[step2][mechanism]", "attached the shared table"),
    # The table's advice copied to the lane's own buffer, which both sides write.
    Mutant("lane.data advised read-mostly (a buffer both sides write)",
           [(CONCURRENT, CONCURRENT + "  if (concurrent)\n    CUDA_CHECK(cudaMemAdvise(lane.data, lane.n * sizeof(unsigned), "
                                      "cudaMemAdviseSetReadMostly, on_device(lane.device)));\n")],
           "[step4][mechanism]", "data was advised read-mostly"),
    # The host step done by the host function itself, on CUDA's thread for host functions:
    # every result right, the signal its own; only the thread the host step ran on shows it.
    Mutant("the host step run by the host function, on CUDA's callback thread",
           [("}  // namespace\n",
             "struct HostWork {\n  const Lane* lane;\n  int round;\n  RoundSignal* signal;\n};\n"
             "void CUDART_CB host_step_then_signal(void* p) {\n  auto* w = static_cast<HostWork*>(p);\n"
             "  host_step(*w->lane, w->round);\n  RoundSignal::on_gpu_done(w->signal);\n}\n}  // namespace\n"),
            (WAIT, "    HostWork work{&lane, r, &signal};\n"
                   "    CUDA_CHECK(cudaLaunchHostFunc(lane.stream, host_step_then_signal, &work));\n"
                   "    signal.wait_for(r);\n"),
            ("    host_step(lane, r);\n", "")],
           "[step3][mechanism]", "did the host step itself"),
    # The next round's move to the GPU enqueued as soon as the signal came, before this
    # round's host step: stream order is the same, but the pages leave under the host's hands.
    Mutant("the next round's move to the GPU enqueued before this round's host step",
           [("    if (concurrent) prefetch_to_gpu(lane);\n    launch_gpu_step(lane, r);\n",
             "    if (concurrent && r == 0) prefetch_to_gpu(lane);\n    launch_gpu_step(lane, r);\n"),
            ("    host_step(lane, r);\n",
             "    if (concurrent && r + 1 < rounds) prefetch_to_gpu(lane);\n    host_step(lane, r);\n")],
           "[step4][mechanism]", "host step had ended"),
]
