#!/usr/bin/env python3
"""Maintainer check: the mechanism tests catch the mistakes the chapters teach about.

Each mutant is the solution with one known mistake put back in (work on the NULL stream,
a synchronising call in the loop, pageable buffers...). For each, this script puts the
mutant in place of the learner's exercise.cu, builds the learner's test executable, runs
the named step's tests and requires that they FAIL with a message naming the mistake.
The learner's file is restored afterwards, whatever happens. Needs a GPU.

    python3 tools/mutants.py            # every chapter's mutants
    python3 tools/mutants.py 02         # one chapter's
"""
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

# chapter -> [(name, [(old, new), ...], step tag, text the failure must contain)]
MUTANTS = {
    "02_streams": [
        ("null-stream",
         [("const auto stream_of = [&](std::size_t c) { return streams[c % streams.size()]; };",
           "const auto stream_of = [&](std::size_t) { (void)streams; return cudaStream_t{}; };")],
         "[step2][mechanism]", "legacy NULL stream"),
        ("device-sync in the loop",
         [("    if (p.after_chunk) p.after_chunk(c, stream_of(c));",
           "    CUDA_CHECK(cudaDeviceSynchronize());\n    if (p.after_chunk) p.after_chunk(c, stream_of(c));")],
         "[step2][mechanism]", "Something waits inside your loop"),
        ("pageable buffers",
         [("  void* p = nullptr;\n  CUDA_CHECK(cudaMallocHost(&p, count * sizeof(int)));\n  return static_cast<int*>(p);",
           "  return new int[count];"),
          ("void free_host_ints(int* p) { CUDA_CHECK(cudaFreeHost(p)); }", "void free_host_ints(int* p) { delete[] p; }")],
         "[step2][mechanism]", "pageable"),
    ],
    "03_unified_memory": [
        ("attached for every stream",
         [("cudaStreamAttachMemAsync(lane.stream, lane.data, 0, cudaMemAttachSingle)",
           "cudaStreamAttachMemAsync(lane.stream, lane.data, 0, cudaMemAttachGlobal)")],
         "[step2][mechanism]", "the attach flag"),
        ("a blocking wait left in",
         [("  signal.wait_for(round);\n}", "  CUDA_CHECK(cudaStreamSynchronize(lane.stream));\n  signal.wait_for(round);\n}")],
         "[step3][mechanism]", "blocking synchronisation"),
        ("no prefetch back to the CPU",
         [("void prefetch_to_cpu(const Lane& lane) {\n  cudaMemLocation host{};\n  host.type = cudaMemLocationTypeHost;\n"
           "  CUDA_CHECK(cudaMemPrefetchAsync(lane.data, lane.n * sizeof(unsigned), host, 0, lane.stream));\n}",
           "void prefetch_to_cpu(const Lane& lane) { (void)lane; }")],
         "[step4][mechanism]", "prefetch the data to the host"),
    ],
    "04_coalescing": [
        ("one block",
         [("copy_coalesced_kernel<<<grid_for(n), 256, 0, stream>>>", "copy_coalesced_kernel<<<1, 256, 0, stream>>>")],
         "[step1][perf]", "want 0.7: launch grid_for"),
        ("float4 built from four float loads",
         [("  const auto* in4 = reinterpret_cast<const float4*>(in);",
           "  const auto in4 = [in](std::size_t g) {\n"
           "    return make_float4(in[4 * g], in[4 * g + 1], in[4 * g + 2], in[4 * g + 3]);\n  };"),
          ("v[u] = in4[i + u * step];", "v[u] = in4(i + u * step);"),
          ("out4[i] = in4[i];", "out4[i] = in4(i);")],
         "[step2][mechanism]", "load float4 through"),
        ("arrays updated by one block",
         [("advance_soa_kernel<<<grid_for(n), 256, 0, stream>>>", "advance_soa_kernel<<<1, 256, 0, stream>>>")],
         "[step3][perf]", "want 1.5x"),
        ("a run of 32 elements per thread",
         [("  for (std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; i < n; i += step)\n"
           "    out[i] = in[i] * factor;",
           "  const std::size_t t = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x;\n"
           "  for (std::size_t first = t * 32; first < n; first += step * 32)\n"
           "    for (std::size_t i = first; i < first + 32 && i < n; ++i) out[i] = in[i] * factor;")],
         "[step4]", "consecutive threads must read consecutive elements"),
    ],
    "01_transfers": [
        ("one copy per piece",
         [("  launch_unpack(staging.device, batch, stream);\n}",
           "  launch_unpack(staging.device, batch, stream);\n  for (std::size_t i = 0; i < batch.count; ++i)\n"
           "    CUDA_CHECK(cudaMemcpyAsync(batch.device_base + batch.device_offsets_host[i], batch.host_base + "
           "batch.host_offsets[i], batch.piece_bytes, cudaMemcpyHostToDevice, stream));\n}")],
         "[step3][mechanism]", "host-to-device copies"),
        ("zero-copy that copies anyway",
         [("void prepare_for_device([[maybe_unused]] const ZeroCopy& buffer,\n                        [[maybe_unused]] cudaStream_t stream) {}",
           "void prepare_for_device(const ZeroCopy& buffer, cudaStream_t stream) {\n"
           "  static void* scratch = nullptr;\n  if (!scratch) CUDA_CHECK(cudaMalloc(&scratch, buffer.bytes));\n"
           "  CUDA_CHECK(cudaMemcpyAsync(scratch, buffer.host, buffer.bytes, cudaMemcpyHostToDevice, stream));\n}")],
         "[step4][mechanism]", "nothing to copy"),
    ],
}


def run(cmd, **kw):
    return subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, **kw)


def check_chapter(chapter):
    num = chapter.split("_")[0]
    learner = ROOT / "chapters" / chapter / "exercise.cu"
    solution = (ROOT / "solutions" / chapter / "exercise.cu").read_text()
    backup = learner.with_suffix(".cu.mutants-backup")
    shutil.copy2(learner, backup)
    failures = 0
    try:
        for name, edits, tag, expect in MUTANTS[chapter]:
            text = solution
            for old, new in edits:
                if old not in text:
                    print(f"ch{num} {name}: the solution no longer contains the text to mutate: {old[:60]!r}")
                    failures += 1
                    break
                text = text.replace(old, new, 1)
            else:
                learner.write_text(text)
                build = run(["meson", "compile", "-C", "build", f"test_ch{num}_learner"])
                if build.returncode != 0:
                    print(f"ch{num} {name}: the mutant does not compile:\n{build.stdout[-2000:]}")
                    failures += 1
                    continue
                result = run([str(ROOT / "build" / "tests" / f"test_ch{num}_learner"), tag], timeout=600)
                out = result.stdout + result.stderr
                # Catch2 wraps long messages over several lines: compare with white space folded.
                caught = result.returncode == 1 and " ".join(expect.split()) in " ".join(out.split())
                print(f"ch{num} {name}: {'caught' if caught else 'NOT CAUGHT'} by {tag} (exit {result.returncode})")
                if not caught:
                    failures += 1
                    print(out[-3000:])
    finally:
        shutil.move(backup, learner)
        # The restored file carries its old time stamp, older than the mutant's objects:
        # without a fresh one, ninja would keep the last mutant's build.
        learner.touch()
        run(["meson", "compile", "-C", "build", f"test_ch{num}_learner"])
    return failures


def main(argv):
    chapters = [c for c in MUTANTS if len(argv) < 2 or c.startswith(argv[1].zfill(2))]
    if not chapters:
        print(f"no mutants for chapter {argv[1]!r}", file=sys.stderr)
        return 2
    setup = run([str(ROOT / "lab"), "setup"])  # configures build/ on a fresh machine
    if setup.returncode != 0:
        print(f"./lab setup failed:\n{setup.stdout}{setup.stderr}", file=sys.stderr)
        return 2
    failures = sum(check_chapter(c) for c in chapters)
    print(f"{'all mutants caught' if failures == 0 else f'{failures} mutant(s) not caught'}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
