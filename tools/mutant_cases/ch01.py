"""Chapter 01's mutants: see tools/mutants.py."""
from . import Mutant

CHAPTER = "01_transfers"

MUTANTS = [
    Mutant("one copy per piece",
     [("  launch_unpack(staging.device, batch, stream);\n}",
       "  launch_unpack(staging.device, batch, stream);\n  for (std::size_t i = 0; i < batch.count; ++i)\n"
       "    CUDA_CHECK(cudaMemcpyAsync(batch.device_base + batch.device_offsets_host[i], batch.host_base + "
       "batch.host_offsets[i], batch.piece_bytes, cudaMemcpyHostToDevice, stream));\n}")],
     "[step3][mechanism]", "host-to-device copies"),
    Mutant("zero-copy that copies anyway",
     [("void prepare_for_device([[maybe_unused]] const ZeroCopy& buffer,\n                        [[maybe_unused]] cudaStream_t stream) {}",
       "void prepare_for_device(const ZeroCopy& buffer, cudaStream_t stream) {\n"
       "  static void* scratch = nullptr;\n  if (!scratch) CUDA_CHECK(cudaMalloc(&scratch, buffer.bytes));\n"
       "  CUDA_CHECK(cudaMemcpyAsync(scratch, buffer.host, buffer.bytes, cudaMemcpyHostToDevice, stream));\n}")],
     "[step4][mechanism]", "nothing to copy"),
    # The watchdog's: the kernel reads the mapped buffer through a null pointer, a sticky
    # error that used to fail every later case of the executable too.
    Mutant("illegal address: no device view of the mapped buffer",
           [("  CUDA_CHECK(cudaHostGetDevicePointer(&buffer.device, buffer.host, 0));\n",
             "  buffer.device = nullptr;  // forgotten: cudaHostGetDevicePointer\n")],
           "[step4]", "step 4 hit a sticky CUDA error", whole=True),
]
