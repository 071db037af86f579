#!/usr/bin/env python3
"""Tests of the layout check (check_layout.py, labkit/layout.py): it passes on the checkout
as it is, and fails, naming the part, on a copy with one chapter broken in each way a
chapter can depart from the skeleton.

Run: python3 tests/cpu/test_layout.py (Meson runs it in the cpu suite).
"""

import shutil
import subprocess
import sys
import tempfile
import unittest
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
CHECK = REPO / "tests" / "cpu" / "check_layout.py"


def chapter_files():
    """What the layout check reads, as it is on disk (not as git's index has it: a copy of the
    working tree may carry an index of another commit): the chapters, solutions, tests,
    labkit, the chapter list and the README."""
    files = ["chapters.txt", "README.md"]
    for top in ("chapters", "solutions", "tests", "labkit"):
        for p in sorted((REPO / top).rglob("*")):
            if p.is_file() and "__pycache__" not in p.parts:
                files.append(str(p.relative_to(REPO)))
    return files


class LayoutCheck(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.files = chapter_files()

    def setUp(self):
        self.tmp = Path(tempfile.mkdtemp(prefix="cml-layout-"))
        for rel in self.files:
            dst = self.tmp / rel
            dst.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(REPO / rel, dst)

    def tearDown(self):
        shutil.rmtree(self.tmp, ignore_errors=True)

    def check(self):
        r = subprocess.run([sys.executable, str(CHECK), str(self.tmp)], capture_output=True, text=True, timeout=60)
        return r.returncode, r.stdout + r.stderr

    def edit(self, rel, old, new):
        path = self.tmp / rel
        text = path.read_text()
        self.assertIn(old, text, f"{rel} no longer holds what this test changes")
        path.write_text(text.replace(old, new))

    def assert_fails_with(self, *fragments):
        rc, out = self.check()
        self.assertEqual(rc, 1, out)
        for f in fragments:
            self.assertIn(f, out)

    def test_the_chapters_as_they_are_pass(self):
        rc, out = self.check()
        self.assertEqual(rc, 0, out)

    def test_a_renamed_part_fails(self):
        (self.tmp / "chapters/02_streams/provided.cu").rename(self.tmp / "chapters/02_streams/support.cu")
        self.assert_fails_with("chapters/02_streams/provided.cu is missing",
                               "chapters/02_streams/support.cu is not a part of a chapter")

    def test_a_renamed_contract_fails(self):
        (self.tmp / "chapters/05_shared_memory/shared_memory.cuh").rename(
            self.tmp / "chapters/05_shared_memory/transpose.cuh")
        self.assert_fails_with("chapters/05_shared_memory/shared_memory.cuh is missing")

    def test_a_solution_without_its_marker_fails(self):
        self.edit("solutions/03_unified_memory/exercise.cu", "cml_ch03_solution_tu", "cml_ch03_solution")
        self.assert_fails_with("solutions/03_unified_memory/exercise.cu lacks its marker")

    def test_a_test_without_the_integrity_case_fails(self):
        self.edit("tests/test_04_coalescing.cpp", 'CML_INTEGRITY_CASE(04, "04_coalescing")', "")
        self.assert_fails_with("tests/test_04_coalescing.cpp lacks its integrity case")

    def test_an_include_of_another_chapters_folder_fails(self):
        path = self.tmp / "chapters/08_cp_async_ptx/harness.hpp"
        path.write_text('#include "../07_memcpy_async/harness.hpp"\n' + path.read_text())
        self.assert_fails_with('chapters/08_cp_async_ptx/harness.hpp includes "../07_memcpy_async/harness.hpp"')

    def test_a_build_that_compiles_another_chapters_solution_fails(self):
        path = self.tmp / "chapters/08_cp_async_ptx/meson.build"
        path.write_text(path.read_text() + "\nch_program += files('../../solutions/07_memcpy_async/exercise.cu')\n")
        self.assert_fails_with("chapters/08_cp_async_ptx/meson.build reaches outside the chapter's folder")

    def test_a_plot_that_loads_another_chapters_script_fails(self):
        path = self.tmp / "chapters/08_cp_async_ptx/plot.py"
        path.write_text(path.read_text() + '\n# Path("07_memcpy_async") / "plot.py"\n')
        self.assert_fails_with("chapters/08_cp_async_ptx/plot.py uses 07_memcpy_async's files")

    def test_a_stray_file_in_a_chapter_fails(self):
        (self.tmp / "chapters/06_memory_spaces/notes.cpp").write_text("// experiments\n")
        self.assert_fails_with("chapters/06_memory_spaces/notes.cpp is not a part of a chapter")

    def test_a_comment_pointing_outside_the_checkout_fails(self):
        path = self.tmp / "chapters/01_transfers/provided.cu"
        path.write_text("// see ../shared" + "/sources/004\n" + path.read_text())  # split: this file must pass
        self.assert_fails_with("chapters/01_transfers/provided.cu:1 points outside the checkout")


if __name__ == "__main__":
    unittest.main(verbosity=2)
