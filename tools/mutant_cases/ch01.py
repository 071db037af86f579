"""Chapter 01's mutants: see tools/mutants.py. Each is a mistake a learner makes, put back
into the solution; the test named by its tag must fail with the message that names it."""
from . import Mutant

CHAPTER = "01_transfers"

ALLOC = "  CUDA_CHECK(cudaMallocHost(&p, bytes));\n  return p;"
FREE = "void free_pinned(void* p) { CUDA_CHECK(cudaFreeHost(p)); }"
CSTDLIB = ("#include <cstring>\n", "#include <cstdlib>\n#include <cstring>\n")  # for the malloc/free mutants
UNREGISTER = "void unpin_existing(void* p) { CUDA_CHECK(cudaHostUnregister(p)); }"
PACKED_COPY = ("    CUDA_CHECK(cudaMemcpyAsync(staging.device + offset, staging.host + offset,\n"
               "                               (end - begin) * batch.piece_bytes, cudaMemcpyHostToDevice, stream));")
UNPACK = "  launch_unpack(staging.device, batch, stream);\n}"
PREPARE = ("void prepare_for_device([[maybe_unused]] const ZeroCopy& buffer,\n"
           "                        [[maybe_unused]] cudaStream_t stream) {}")

PER_COPY = "  const std::size_t per_copy = std::max<std::size_t>(1, (std::size_t{1} << 20) / batch.piece_bytes);\n"
REGISTER = "{ CUDA_CHECK(cudaHostRegister(p, bytes, cudaHostRegisterDefault)); }"  # pin_existing's body

POOLED = ("  pool.run(parts, [&](std::size_t p) {\n"
          "    pack_and_send(batch, staging, stream, p * per_part, std::min(batch.count, (p + 1) * per_part));\n"
          "  });\n")
MUTANTS = [
    # Pinned, but write-combined: copies are as fast and as asynchronous, and every host read
    # of what came back goes around the CPU's caches. Only the allocation's flags show it.
    Mutant("allocate_pinned write-combined",
           [("  CUDA_CHECK(cudaMallocHost(&p, bytes));", "  CUDA_CHECK(cudaHostAlloc(&p, bytes, cudaHostAllocWriteCombined));")],
           "[step1][mechanism]", "write-combined (cudaHostAllocWriteCombined)"),
    # ---- step 1: pinned memory, new and in place ------------------------------------
    Mutant("pageable allocate_pinned",
           [CSTDLIB, (ALLOC, "  p = std::malloc(bytes);\n  return p;"), (FREE, "void free_pinned(void* p) { std::free(p); }")],
           "[step1][mechanism]", "allocate_pinned returned pageable memory"),
    Mutant("pageable allocate_pinned: the round trip waits",
           [CSTDLIB, (ALLOC, "  p = std::malloc(bytes);\n  return p;"), (FREE, "void free_pinned(void* p) { std::free(p); }")],
           "[step1][correctness]", "waited for the work queued before it"),
    Mutant("free_pinned with cudaFree",
           [(FREE, "void free_pinned(void* p) { CUDA_CHECK(cudaFree(p)); }")],
           "[step1][mechanism]", "free_pinned made 0 cudaFreeHost and 1 cudaFree"),
    Mutant("free_pinned left empty",
           [(FREE, "void free_pinned(void* p) { (void)p; }")],
           "[step1][mechanism]", "free_pinned made 0 cudaFreeHost"),
    # A mismatched free may abort the process (glibc: free(): invalid pointer): the crash
    # note names the cause; if it does not crash, the callback trace does.
    Mutant("free_pinned with free() (mismatched free)",
           [CSTDLIB, (FREE, "void free_pinned(void* p) { std::free(p); }")],
           "[step1][mechanism]", "cudaFreeHost"),
    Mutant("pin_existing does nothing",
           [(REGISTER, "{\n  (void)p;\n  (void)bytes;\n}")],
           "[step1][mechanism]", "after pin_existing the buffer is still pageable"),
    Mutant("pin_existing does nothing: the round trip waits",
           [(REGISTER, "{\n  (void)p;\n  (void)bytes;\n}")],
           "[step1][correctness]", "the buffer is still pageable"),
    Mutant("pin_existing locks a quarter of the range (length in ints, not bytes)",
           [(REGISTER, "{ CUDA_CHECK(cudaHostRegister(p, bytes / 4, cudaHostRegisterDefault)); }")],
           "[step1][mechanism]", "the end of the range is still pageable"),
    Mutant("unpin_existing does nothing",
           [(UNREGISTER, "void unpin_existing(void* p) { (void)p; }")],
           "[step1][mechanism]", "unpin_existing made 0 cudaHostUnregister"),
    # ---- step 2: batching ----------------------------------------------------------
    Mutant("one copy per piece",
     [(UNPACK,
       "  launch_unpack(staging.device, batch, stream);\n  for (std::size_t i = 0; i < batch.count; ++i)\n"
       "    CUDA_CHECK(cudaMemcpyAsync(batch.device_base + batch.device_offsets_host[i], batch.host_base + "
       "batch.host_offsets[i], batch.piece_bytes, cudaMemcpyHostToDevice, stream));\n}")],
     "[step2][mechanism]", "host-to-device copies"),
    Mutant("packed copy on the legacy stream",
           [(PACKED_COPY, "    (void)stream;\n" + PACKED_COPY.replace("cudaMemcpyHostToDevice, stream)", "cudaMemcpyHostToDevice, nullptr)"))],
           "[step2][mechanism]", "another stream than the one it was given"),
    Mutant("unpack on the legacy stream",
           [(UNPACK, "  launch_unpack(staging.device, batch, cudaStreamLegacy);\n}")],
           "[step2][mechanism]", "on the legacy default stream"),
    Mutant("packed copies on each packing thread's per-thread default stream",
           [(PACKED_COPY, "    (void)stream;\n" + PACKED_COPY.replace("cudaMemcpyHostToDevice, stream)",
                                                                   "cudaMemcpyHostToDevice, cudaStreamPerThread)"))],
           "[step2][mechanism]", "ran on another stream than the one it was given"),
    Mutant("staging cleared first by a memset on the legacy stream",
           [("  if (total == 0) return;\n",
             "  if (total == 0) return;\n  CUDA_CHECK(cudaMemsetAsync(staging.device, 0, total));  // a clean slate\n")],
           "[step2][mechanism]", "1 memset(s) ran on another stream"),
    Mutant("synchronises before returning",
           [(UNPACK, "  launch_unpack(staging.device, batch, stream);\n  CUDA_CHECK(cudaStreamSynchronize(stream));\n}")],
           "[step2][mechanism]", "calls that wait for the GPU: cudaStreamSynchronize"),
    Mutant("synchronous packed copy",
           [(PACKED_COPY, "    (void)stream;\n    CUDA_CHECK(cudaMemcpy(staging.device + offset, staging.host + offset,\n"
                          "                          (end - begin) * batch.piece_bytes, cudaMemcpyHostToDevice));")],
           "[step2][mechanism]", "calls that wait for the GPU: cudaMemcpy"),
    # Cheating the copy count: one packed copy, then device-to-device copies per piece
    # instead of the unpack kernel.
    Mutant("scatter with device-to-device copies instead of launch_unpack",
           [(UNPACK, "  for (std::size_t i = 0; i < batch.count; ++i)\n"
                     "    CUDA_CHECK(cudaMemcpyAsync(batch.device_base + batch.device_offsets_host[i], staging.device + "
                     "i * batch.piece_bytes, batch.piece_bytes, cudaMemcpyDeviceToDevice, stream));\n}")],
           "[step2][mechanism]", "unpack kernel(s)"),
    Mutant("pieces packed from the wrong offset",
           [("batch.host_base + batch.host_offsets[i],\n", "batch.host_base + i * batch.piece_bytes,\n")],
           "[step2][correctness]", "piece i goes from"),
    # ---- step 3: zero-copy -----------------------------------------------------------
    Mutant("zero-copy that copies anyway",
     [(PREPARE,
       "void prepare_for_device(const ZeroCopy& buffer, cudaStream_t stream) {\n"
       "  static void* scratch = nullptr;\n  if (!scratch) CUDA_CHECK(cudaMalloc(&scratch, buffer.bytes));\n"
       "  CUDA_CHECK(cudaMemcpyAsync(scratch, buffer.host, buffer.bytes, cudaMemcpyHostToDevice, stream));\n}")],
     "[step3][mechanism]", "nothing to copy"),
    Mutant("prepare_for_device warms the mapping with a kernel on the legacy stream",
           [(PREPARE, "__global__ void touch_kernel(const unsigned char* p) {\n"
                      "  if (threadIdx.x == 0) {\n    volatile unsigned char c = p[0];\n    (void)c;\n  }\n}\n\n"
                      "void prepare_for_device(const ZeroCopy& buffer, [[maybe_unused]] cudaStream_t stream) {\n"
                      "  touch_kernel<<<1, 1>>>(static_cast<const unsigned char*>(buffer.device));\n"
                      "  CUDA_CHECK_LAUNCH();\n}")],
           "[step3][mechanism]", "on the legacy default stream"),
    Mutant("prepare_for_device waits",
           [(PREPARE, "void prepare_for_device([[maybe_unused]] const ZeroCopy& buffer, cudaStream_t stream) {\n"
                      "  CUDA_CHECK(cudaStreamSynchronize(stream));\n}")],
           "[step3][mechanism]", "prepare_for_device made calls that wait for the GPU"),
    Mutant("a device buffer allocated anyway",
           [("  CUDA_CHECK(cudaHostGetDevicePointer(&buffer.device, buffer.host, 0));\n",
             "  CUDA_CHECK(cudaHostGetDevicePointer(&buffer.device, buffer.host, 0));\n"
             "  void* spare = nullptr;\n  CUDA_CHECK(cudaMalloc(&spare, bytes));\n  CUDA_CHECK(cudaFree(spare));\n")],
           "[step3][mechanism]", "allocate_zero_copy called cudaMalloc 1"),
    Mutant("free_zero_copy with cudaFree",
           [("  CUDA_CHECK(cudaFreeHost(buffer.host));\n  buffer = ZeroCopy{};",
             "  CUDA_CHECK(cudaFree(buffer.host));\n  buffer = ZeroCopy{};")],
           "[step3][mechanism]", "free_zero_copy made 0 cudaFreeHost"),
    # The watchdog's: the kernel reads the mapped buffer through a null pointer, a sticky
    # error that used to fail every later case of the executable too.
    Mutant("illegal address: no device view of the mapped buffer",
           [("  CUDA_CHECK(cudaHostGetDevicePointer(&buffer.device, buffer.host, 0));\n",
             "  buffer.device = nullptr;  // forgotten: cudaHostGetDevicePointer\n")],
           "[step3]", "step 3 hit a sticky CUDA error", whole=True),
    # ---- issue 26: per call, not per process (several calls in one process) ---------------
    Mutant("allocate_pinned hands out one buffer kept from the first call",
           [(ALLOC, "  static void* kept = nullptr;\n  if (kept == nullptr) CUDA_CHECK(cudaMallocHost(&kept, bytes));\n"
                    "  p = kept;\n  return p;")],
           "[step1][mechanism]", "one buffer handed out twice"),
    Mutant("pin_existing pins the first range only (std::call_once)",
           [("#include <cstring>\n", "#include <cstring>\n#include <mutex>\n"),
            (REGISTER, "{\n  static std::once_flag once;\n"
                       "  std::call_once(once, [&] { CUDA_CHECK(cudaHostRegister(p, bytes, cudaHostRegisterDefault)); });\n}")],
           "[step1][mechanism]", "pins the first range only"),
    Mutant("unpin_existing unregisters the first range it was given, every time",
           [(UNREGISTER, "void unpin_existing(void* p) {\n  static void* const first = p;\n"
                         "  CUDA_CHECK(cudaHostUnregister(first));\n}")],
           "[step1][mechanism]", "unpin_existing of range 2 made 0 cudaHostUnregister of it"),
    Mutant("the zero-copy device view kept from the first buffer",
           [("  CUDA_CHECK(cudaHostGetDevicePointer(&buffer.device, buffer.host, 0));\n",
             "  static void* view = nullptr;\n"
             "  if (view == nullptr) CUDA_CHECK(cudaHostGetDevicePointer(&view, buffer.host, 0));\n"
             "  buffer.device = view;\n")],
           "[step3][mechanism]", "not one kept from an earlier call (step 3"),
    # ---- issue 26: what the kernel reads ------------------------------------------------
    # The unpack kernel handed the pinned staging: the pieces land right, the copies still
    # run (for nothing), and the batch still beats one copy per piece.
    Mutant("the unpack kernel reads the pinned staging over the bus",
           [(UNPACK, "  launch_unpack(staging.host, batch, stream);\n}")],
           "[step2][mechanism]", "staging.host, pinned host memory, over the bus"),
    Mutant("small batches unpacked from the pinned staging",
           [(UNPACK, "  launch_unpack(total < (std::size_t{1} << 20) ? staging.host : staging.device, batch, stream);\n}")],
           "[step2][mechanism]", "staging.host, pinned host memory, over the bus"),
    # One thread packs, then one copy of staging.bytes: the contract makes staging at least the
    # pieces' size, and the tests make it a piece and 12 bytes larger, so the copy moves bytes
    # nobody packed (the results stay right: the unpack reads only the packed ones).
    Mutant("the packed copy sized by staging.bytes, not by the pieces",
           [("  pool.run(parts, [&](std::size_t p) {\n"
             "    pack_and_send(batch, staging, stream, p * per_part, std::min(batch.count, (p + 1) * per_part));\n"
             "  });\n",
             "  (void)per_part;\n  (void)&pack_and_send;  // the pooled path, unused\n"
             "  for (std::size_t i = 0; i < batch.count; ++i)\n"
             "    std::memcpy(staging.host + i * batch.piece_bytes, batch.host_base + batch.host_offsets[i], "
             "batch.piece_bytes);\n"
             "  CUDA_CHECK(cudaMemcpyAsync(staging.device, staging.host, staging.bytes, cudaMemcpyHostToDevice, stream));\n")],
           "[step2][mechanism]", "is at least that, not exactly"),
    # Issue 38's second read (2026-12-06). A copy of 1 MiB / piece_bytes pieces with no floor
    # of 1: a piece over 1 MiB makes it 0, and the loop never ends (a 1.5 MiB piece now).
    Mutant("chunk of 1 MiB / piece_bytes pieces, no max(1, ...): a piece over 1 MiB loops for ever",
           [(PER_COPY, "  const std::size_t per_copy = (std::size_t{1} << 20) / batch.piece_bytes;\n")],
           "[step2]", "never finished within", whole=True),
    # pin_existing "touches every page" with a memset first: the program's data is gone.
    Mutant("pin_existing touches every page with a memset first (wipes the program's data)",
           [(REGISTER, "{\n  std::memset(p, 0, bytes);  // touch every page first\n"
                       "  CUDA_CHECK(cudaHostRegister(p, bytes, cudaHostRegisterDefault));\n}")],
           "[step1][mechanism]", "no longer holds what the program wrote"),
    # allocate_pinned as malloc + pin_existing, freed with cudaFreeHost, which refuses it.
    Mutant("allocate_pinned = malloc + pin_existing, freed with cudaFreeHost (the free fails)",
           [("#include <cstring>\n", "#include <cstdlib>\n#include <cstring>\n#include <new>\n"),
            (ALLOC, "  p = std::malloc(bytes);\n  if (p == nullptr) throw std::bad_alloc();\n"
                    "  pin_existing(p, bytes);\n  return p;")],
           "[step1][mechanism]", "it failed"),
    # Two staging slots packed in turn, each reused before its copy has run (racy on a slow link;
    # seen at once where the stream is held shut).
    Mutant("two staging.host slots reused before their copies are done (ring without a wait)",
           [(POOLED,
             "  (void)per_part;\n  (void)&pack_and_send;  // the pooled path, unused\n"
             "  // Two 1 MiB slots of staging.host in turn: the copy engine sends one while the CPU packs the other.\n"
             "  const std::size_t per_copy = std::max<std::size_t>(1, (std::size_t{1} << 20) / batch.piece_bytes);\n"
             "  std::size_t slot = 0;\n"
             "  for (std::size_t begin = 0; begin < batch.count; begin += per_copy, slot ^= 1) {\n"
             "    const std::size_t end = std::min(batch.count, begin + per_copy);\n"
             "    std::byte* packed = staging.host + slot * per_copy * batch.piece_bytes;\n"
             "    for (std::size_t i = begin; i < end; ++i)\n"
             "      std::memcpy(packed + (i - begin) * batch.piece_bytes, batch.host_base + batch.host_offsets[i],\n"
             "                  batch.piece_bytes);\n"
             "    CUDA_CHECK(cudaMemcpyAsync(staging.device + begin * batch.piece_bytes, packed,\n"
             "                               (end - begin) * batch.piece_bytes, cudaMemcpyHostToDevice, stream));\n"
             "  }\n")],
           "[step2][mechanism]", "a slot reused too early"),
    # ch01 - P3. "Touch every page before locking it" (the tests' own Registered fixture does it,
    # on a buffer it is about to overwrite): in pin_existing it wipes the program's data. No case
    # looks at the buffer's bytes between pin_existing and the next write.
]
