#!/usr/bin/env python3
"""./lab check and ./lab run on real builds of a learner's mistakes, without a GPU: each
mistake is written into a scratch copy of the checkout's chapter 05 (never the learner's
file), built with nvcc, and what lab prints and exits is asserted: a device function and a
host function declared but never defined, a wrong signature, a call that matches no
overload, an error inside a system header's template (shown at the learner's call), a
deleted exercise.cu, and a check with step 1 done (later steps' compiled code
failing, the steps between not checkable without a GPU). And: a check of chapter 08 runs
cuobjdump at most once per binary (a wrapper on PATH counts the calls).

Slow (it builds two chapters in the copy): Meson runs it in the cpu suite with a long
time-out. The GPU is hidden from the copy's programs (CUDA_VISIBLE_DEVICES=""), so the
no-GPU path is the one checked on any machine.

Run: python3 tests/cpu/test_lab_builds.py
"""

import os
import shutil
import subprocess
import sys
import tempfile
import unittest
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
SKIPPED_TOP = {".git", "build", ".venv", ".lab", "bench", "peers", ".gl", ".whl"}
CH05 = "chapters/05_shared_memory/exercise.cu"


def copy_checkout(dst: Path) -> None:
    """The checkout's files as they are on disk, without builds, state or caches."""
    for path in sorted(REPO.iterdir()):
        if path.name in SKIPPED_TOP or path.name.startswith("build-"):
            continue
        target = dst / path.name
        if path.is_dir():
            shutil.copytree(path, target, ignore=shutil.ignore_patterns("__pycache__", "*.sass", "*.sass.lock"))
        else:
            shutil.copy2(path, target)
    if (REPO / ".venv").is_dir():
        (dst / ".venv").symlink_to(REPO / ".venv")   # the Meson and Ninja ./lab installed there


def find_cuobjdump():
    """The cuobjdump (with nvdisasm beside it) the SASS checks would use, or None."""
    dirs = os.environ.get("PATH", "").split(os.pathsep) + ["/usr/local/cuda/bin"]
    dirs += [str(p) for p in sorted((REPO / ".venv" / "lib").glob("python*/site-packages/nvidia/cu13/bin"))]
    for d in dirs:
        if d and (Path(d) / "cuobjdump").is_file() and (Path(d) / "nvdisasm").is_file():
            return Path(d)
    return None


class LabOnRealBuilds(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        if shutil.which("nvcc") is None and not Path("/usr/local/cuda/bin/nvcc").exists():
            raise unittest.SkipTest("nvcc is not installed: nothing can be built")
        cls.tmp = Path(tempfile.mkdtemp(prefix="cml-lab-builds-"))
        cls.root = cls.tmp / "repo"
        cls.root.mkdir()
        copy_checkout(cls.root)
        cls.starter = (cls.root / CH05).read_text()
        cls.env = {k: v for k, v in os.environ.items() if not k.startswith("CML_")}
        cls.env.update(CML_LAB_STATE_DIR=str(cls.tmp / "state"), CML_LAB_NO_INSTALL="1", NO_COLOR="1",
                       CUDA_VISIBLE_DEVICES="")
        # The first check builds the chapter's tests and program (a few minutes on 2 cores);
        # each mistake below recompiles exercise.cu alone.
        cls.first = cls.lab("check", "05")

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp, ignore_errors=True)

    @classmethod
    def lab(cls, *args, env=None):
        return subprocess.run([sys.executable, str(cls.root / "lab"), *args], cwd=cls.root, env=env or cls.env,
                              capture_output=True, text=True, timeout=1500)

    def write(self, old: str, new: str) -> None:
        """Chapter 05's starter with one edit: a learner's mistake."""
        self.assertIn(old, self.starter, "the starter no longer holds what this test edits")
        (self.root / CH05).write_text(self.starter.replace(old, new, 1))
        self.addCleanup((self.root / CH05).write_text, self.starter)

    def assert_read_not_dumped(self, out: str) -> None:
        for noise in ("nvcc -", "tmpxft", "ninja: build stopped", "INFO: ", "FAILED: "):
            self.assertNotIn(noise, out)

    def failed_build(self, *command) -> str:
        """What `./lab COMMAND` printed about a build that must fail: exit 1, read not dumped."""
        r = self.lab(*command)
        out = r.stdout + r.stderr
        self.assertEqual(r.returncode, 1, out)
        self.assert_read_not_dumped(out)
        return out

    # ---- what the starter does without a GPU ------------------------------------------------

    def test_the_starter_checked_without_a_gpu_fails_at_its_first_step(self):
        r = self.first
        self.assertEqual(r.returncode, 1, r.stdout + r.stderr)
        self.assertIn("failed   step 1: transpose_tiled_kernel's SASS has BAR.SYNC", r.stdout)
        self.assertIn("hint: ./lab hint 05 --step 1", r.stdout)

    def test_step_1_done_a_later_failure_is_not_called_the_first_and_gpu_steps_are_not_checked(self):
        self.write("__global__ void transpose_tiled_kernel(const float* __restrict__ in, float* __restrict__ out, "
                   "int rows, int cols) {\n  transpose_naive_body(in, out, rows, cols);\n}",
                   "__global__ void transpose_tiled_kernel(const float* __restrict__ in, float* __restrict__ out, "
                   "int rows, int cols) {\n"
                   "  __shared__ float tile[kTile][kTile];\n"
                   "  const int row0 = blockIdx.y * kTile, col0 = blockIdx.x * kTile;\n"
                   "  for (int k = 0; k < kTile; k += kBlockRows) {\n"
                   "    const int r = row0 + threadIdx.y + k, c = col0 + threadIdx.x;\n"
                   "    if (r < rows && c < cols) tile[threadIdx.y + k][threadIdx.x] = in[r * cols + c];\n"
                   "  }\n"
                   "  __syncthreads();\n"
                   "  for (int k = 0; k < kTile; k += kBlockRows) {\n"
                   "    const int r = col0 + threadIdx.y + k, c = row0 + threadIdx.x;\n"
                   "    if (r < cols && c < rows) out[r * rows + c] = tile[threadIdx.x][threadIdx.y + k];\n"
                   "  }\n"
                   "}")
        r = self.lab("check", "05")
        self.assertEqual(r.returncode, 1, r.stdout + r.stderr)
        self.assertIn("passed   step 1: transpose_tiled_kernel's SASS has BAR.SYNC", r.stdout)
        self.assertRegex(r.stdout, r"step 2\s+not checked here \(no GPU\)")
        self.assertRegex(r.stdout, r"step 3\s+not checked here \(no GPU\)")
        self.assertIn("could not be checked here", r.stdout)
        self.assertNotIn("first failure: ", r.stdout)
        table = self.lab().stdout
        self.assertNotIn("failing at step 4", table)
        self.assertIn("skipped: no GPU; step 4's SASS fails", table)

    # ---- build and link failures ---------------------------------------------------------------

    def test_a_device_function_declared_but_not_defined(self):
        self.write("__global__ void transpose_tiled_kernel(const float* __restrict__ in, float* __restrict__ out, "
                   "int rows, int cols) {\n  transpose_naive_body(in, out, rows, cols);",
                   "__device__ int tile_index(int r, int c);\n\n"
                   "__global__ void transpose_tiled_kernel(const float* __restrict__ in, float* __restrict__ out, "
                   "int rows, int cols) {\n  if (tile_index(rows, cols) < 0) return;\n"
                   "  transpose_naive_body(in, out, rows, cols);")
        for command in (("check", "05"), ("run", "05")):
            with self.subTest(command=command):
                out = self.failed_build(*command)
                self.assertIn("`ch05::tile_index(int, int)` is declared but not defined in exercise.cu", out)
                self.assertIn("transpose_tiled_kernel (exercise.cu:", out)
                self.assertNotIn("ptxas", out)
                self.assertIn("full log: ", out)  # the whole log is kept (in .lab/, or CML_LAB_STATE_DIR)

    def test_a_host_function_declared_but_not_defined_is_a_link_failure(self):
        self.write("  if (rows <= 0 || cols <= 0) return;\n  transpose_tiled_kernel",
                   "  if (rows <= 0 || cols <= 0 || tile_count_of(rows) < 0) return;\n  transpose_tiled_kernel")
        self.write_more("void transpose_tiled(const float* in", "int tile_count_of(int rows);\n\n"
                        "void transpose_tiled(const float* in")
        out = self.failed_build("check", "05")
        self.assertIn("does not link", out)
        self.assertIn("`ch05::tile_count_of(int)` is declared but not defined in exercise.cu", out)
        self.assertIn("transpose_tiled (exercise.cu:", out)

    def write_more(self, old: str, new: str) -> None:
        """A second edit on top of write()'s."""
        path = self.root / CH05
        text = path.read_text()
        self.assertIn(old, text)
        path.write_text(text.replace(old, new, 1))

    def test_a_wrong_signature_names_the_declaration_to_match(self):
        self.write("void transpose_tiled(const float* in, float* out, int rows, int cols, cudaStream_t stream) {",
                   "void transpose_tiled(const float* in, float* out, int rows, unsigned cols, cudaStream_t stream) {")
        out = self.failed_build("check", "05")
        self.assertIn("does not define `ch05::transpose_tiled(", out)
        self.assertIn("(declared in shared_memory.cuh)", out)
        self.assertIn("has another signature; make it match shared_memory.cuh", out)

    def test_a_call_that_matches_no_overload_keeps_the_argument_types(self):
        self.write("  if (rows <= 0 || cols <= 0) return;\n  transpose_tiled_kernel",
                   "  if (rows <= 0 || cols <= 0) return;\n  const int n = std::max(rows, 2u);\n  (void)n;\n"
                   "  transpose_tiled_kernel")
        self.write_more('#include "cml/errors.hpp"', '#include "cml/errors.hpp"\n\n#include <algorithm>')
        out = self.failed_build("check", "05")
        self.assertIn(f"{CH05}:", out)
        self.assertIn("argument types are: (int, unsigned int)", out)
        self.assertIn("std::max(rows, 2u)", out)

    def test_an_error_inside_a_system_header_is_shown_at_the_learners_call(self):
        self.write("  if (rows <= 0 || cols <= 0) return;\n  transpose_tiled_kernel",
                   "  if (rows <= 0 || cols <= 0) return;\n  std::map<int, int> order;\n"
                   "  std::sort(order.begin(), order.end());\n  transpose_tiled_kernel")
        self.write_more('#include "cml/errors.hpp"', '#include "cml/errors.hpp"\n\n#include <algorithm>\n#include <map>')
        out = self.failed_build("check", "05")
        line = next(i for i, l in enumerate((self.root / CH05).read_text().splitlines(), 1) if "std::sort" in l)
        self.assertIn(f"your {CH05} does not compile:", out)
        self.assertIn(f"{CH05}:{line}: error: ", out)
        self.assertRegex(out, r"\(inside std::sort, which this line calls: \S*stl_algo.h:\d+")
        self.assertIn("std::sort(order.begin(), order.end());", out)
        self.assertLess(len(out.splitlines()), 12, out)

    def test_a_deleted_exercise_is_one_line_with_the_reset_command(self):
        path = self.root / CH05
        path.unlink()
        self.addCleanup(path.write_text, self.starter)
        for command in (("check", "05"), ("run", "05"), ("diff", "05", "--yes"), ("bench", "05")):
            with self.subTest(command=command):
                r = self.lab(*command)
                self.assertEqual(r.returncode, 1, r.stdout + r.stderr)
                self.assertEqual(r.stderr.strip(), f"lab: {CH05} is missing: ./lab reset 05 restores the starter")
        self.assertIn("exercise.cu is missing: ./lab reset 05", self.lab().stdout)

    # ---- the SASS checks disassemble each binary once ------------------------------------------

    def test_a_check_without_a_gpu_runs_cuobjdump_at_most_once_per_binary(self):
        real = find_cuobjdump()
        if real is None:
            self.skipTest("cuobjdump with nvdisasm is not installed here")
        wrappers = self.tmp / "wrappers"
        wrappers.mkdir(exist_ok=True)
        log = self.tmp / "cuobjdump-calls.txt"
        (wrappers / "cuobjdump").write_text(f'#!/bin/sh\necho "$@" >> "{log}"\nexec "{real}/cuobjdump" "$@"\n')
        (wrappers / "cuobjdump").chmod(0o755)
        if not (wrappers / "nvdisasm").exists():
            (wrappers / "nvdisasm").symlink_to(real / "nvdisasm")
        for cache in (self.root / "build").glob("**/*.sass"):
            cache.unlink()
        # ./lab puts nvcc's folder first on its children's PATH, and a toolkit's bin/ has a
        # cuobjdump of its own: the wrapper is named explicitly.
        env = dict(self.env, CML_CUOBJDUMP=str(wrappers / "cuobjdump"))
        r = self.lab("check", "08", env=env)
        self.assertIn(r.returncode, (1, 77), r.stdout + r.stderr)
        self.assertIn("SASS", r.stdout)
        calls = log.read_text().splitlines() if log.exists() else []
        binaries = [c.split()[-1] for c in calls]
        self.assertTrue(binaries, "no cuobjdump call was seen: the check ran no SASS check")
        self.assertEqual(len(binaries), len(set(binaries)), f"cuobjdump ran more than once on a binary: {calls}")


if __name__ == "__main__":
    unittest.main(verbosity=2)
