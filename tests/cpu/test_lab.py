#!/usr/bin/env python3
"""Tests of ./lab that need no GPU, no nvcc, no network and no build: its command line,
the chapter table, hints, diff, reset, and the parsers that turn `meson test` summaries,
Catch2 JUnit reports (v2 and v3) and compiler output into what the learner sees.

Every test works on a temporary copy of lab + chapters.txt + chapters/ + solutions/ with
its own state folder (CML_LAB_STATE_DIR), so the learner's real progress and files are
never touched. Run: python3 tests/cpu/test_lab.py (Meson runs it in the cpu suite).
"""

import io
import json
import os
import shutil
import subprocess
import sys
import tempfile
import unittest
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
LAB = REPO / "lab"


sys.path.insert(0, str(REPO))
from labkit import (chapters, check, cli, core, diagnostics, diff, hints, junit, run,  # noqa: E402
                    selftest, source, steps, terminal, toolchain, watch)

SAMPLE_HINTS = """# Hints: chapter one

## Step 1 — pinned memory: where to start
Allocate the host buffer with cudaMallocHost.

## Step 2 — overlap: streams
Give each chunk its own stream.

## Step 2 — overlap: the last chunk
N is not a multiple of the chunk count.
"""

STARTER = "// starter\nvoid copy() {\n  // TODO(1): copy\n}\n"
SOLUTION = "// starter\nvoid copy() {\n  cudaMemcpyAsync(dst, src, n, cudaMemcpyHostToDevice, s);\n}\n"

# Real `meson test` output (Meson 1.12) with every kind of result, then an all-ok one.
SUMMARY_MIXED = """\
1/6 cpu - mt:ok1         OK              0.01s
2/6 solutions - mt:skip1 SKIP            0.01s   exit status 77
3/6 solutions - mt:fail1 FAIL            0.01s   exit status 1
4/6 starters - mt:xfail  EXPECTEDFAIL    0.01s   exit status 1
5/6 starters - mt:upass  UNEXPECTEDPASS  0.01s
6/6 starters - mt:tmo    TIMEOUT         1.01s   killed by signal 15 SIGTERM

Summary of Failures:

3/6 solutions - mt:fail1 FAIL            0.01s   exit status 1

Ok:                1   
Expected Fail:     1   
Fail:              1   
Unexpected Pass:   1   
Skipped:           1   
Timeout:           1   

Full log written to /tmp/mt/b/meson-logs/testlog.txt
"""

SUMMARY_CI = """\
1/4 cpu - cuda-memory-lab:cpu                 OK              0.20s
2/4 cpu - cuda-memory-lab:lab runner          OK              1.50s
3/4 solutions - cuda-memory-lab:ch01 solution SKIP            0.05s   exit status 77
4/4 solutions - cuda-memory-lab:ch02 solution SKIP            0.05s   exit status 77
Ok: 2
Ok:                 2
Expected Fail:      0
Fail:               0
Unexpected Pass:    0
Skipped:            2
Timeout:            0

Full log written to /x/build/meson-logs/testlog.txt
"""

# Catch2 v2 (2.13.10) JUnit output, as our tests produce it: sections, REQUIRE with INFO,
# FAIL, an exception, and a CML_SKIP (v2 has no SKIP: the reason is on std::cerr).
JUNIT_V2 = """<?xml version="1.0" encoding="UTF-8"?>
<testsuites>
  <testsuite name="test_ch01_learner" errors="1" failures="2" tests="7" hostname="tbd" time="0.000" timestamp="2026-11-22T02:15:54Z">
    <testcase classname="test_ch01_learner.global" name="step 1: copies are correct" time="0.000" status="run"/>
    <testcase classname="test_ch01_learner.global" name="step 1: sizes/not round/odd N" time="0.000" status="run"/>
    <testcase classname="test_ch01_learner.global" name="step 2: copies use pinned memory" time="0.000" status="run">
      <failure message="pinned == 3" type="REQUIRE">
FAILED:
  REQUIRE( pinned == 3 )
with expansion:
  0 == 3
copies used pageable memory: allocate the host buffer with cudaMallocHost
at /work/main/tests/test_01_transfers.cpp:13
      </failure>
    </testcase>
    <testcase classname="test_ch01_learner.global" name="step 3: zero-copy" time="0.000" status="run">
      <system-err>
SKIP: no canMapHostMemory on this GPU
      </system-err>
    </testcase>
    <testcase classname="test_ch01_learner.global" name="step 4: explicit fail/part a" time="0.000" status="run">
      <failure type="FAIL">
FAILED:
the staged time is over 0.8 of the bound
at ../tests/test_01_transfers.cpp:22
      </failure>
    </testcase>
    <testcase classname="test_ch01_learner.global" name="step 5: throws" time="0.000" status="run">
      <error type="TEST_CASE">
FAILED:
cudaErrorIllegalAddress: an illegal memory access
at ../tests/test_01_transfers.cpp:24
      </error>
    </testcase>
    <testcase classname="test_ch01_learner.global" name="reference helpers agree" time="0.000" status="run"/>
    <system-out/>
    <system-err/>
  </testsuite>
</testsuites>
"""

# Catch2 v3 JUnit output: <skipped> with its reason, a passing step, a failing one.
JUNIT_V3 = """<?xml version="1.0" encoding="UTF-8"?>
<testsuites>
  <testsuite name="test_ch01_learner" errors="0" failures="1" skipped="1" tests="4" hostname="tbd" time="0.5" timestamp="2026-11-22T02:15:54Z">
    <properties>
      <property name="random-seed" value="1"/>
    </properties>
    <testcase classname="test_ch01_learner.global" name="step 1: copies are correct" time="0.1" status="run"/>
    <testcase classname="test_ch01_learner.global" name="step 2: staged copies overlap" time="0.1" status="run">
      <failure message="trace.overlapped()" type="CHECK">
FAILED:
  CHECK( trace.overlapped() )
with expansion:
  false
copies ran on the NULL stream: pass streams[i] to cudaMemcpyAsync
at /work/main/tests/test_01_transfers.cpp:88
      </failure>
    </testcase>
    <testcase classname="test_ch01_learner.global" name="step 2: results are exact" time="0.1" status="run"/>
    <testcase classname="test_ch01_learner.global" name="step 3: bank conflicts (ncu)" time="0.1" status="run">
      <skipped type="SKIP">
SKIPPED
ncu counters need root (RmProfilingAdminOnly=1)
at /work/main/tests/test_01_transfers.cpp:120
      </skipped>
    </testcase>
    <system-out/>
    <system-err/>
  </testsuite>
</testsuites>
"""

JUNIT_V3_PASS = """<?xml version="1.0" encoding="UTF-8"?>
<testsuites><testsuite name="t" errors="0" failures="0" skipped="0" tests="2">
<testcase classname="t.global" name="step 1: a" time="0.1" status="run"/>
<testcase classname="t.global" name="step 2: b" time="0.1" status="run"/>
</testsuite></testsuites>
"""

NVCC_OUTPUT = """\
[3/9] Compiling Cuda object chapters/libch01_learner.a.p/01_transfers_exercise.cu.o
FAILED: chapters/libch01_learner.a.p/01_transfers_exercise.cu.o
/usr/local/cuda/bin/nvcc -Ichapters -I../chapters -c ../chapters/01_transfers/exercise.cu
../chapters/01_transfers/exercise.cu(2): error: identifier "y" is undefined
  __attribute__((global)) void k(float* x) { x[threadIdx.x] = y; }
                                                               ^

../chapters/01_transfers/exercise.cu(3): error: no instance of overloaded function "std::vector<_Tp, _Alloc>::push_back" matches the argument list
            argument types are: (const char [2])
  void f() { std::vector<int> v; v.push_back("a"); }
                                   ^
/usr/include/c++/12/bits/stl_vector.h(1293): note #3326-D: function "std::vector<_Tp, _Alloc>::push_back" does not match
        push_back(value_type&& __x)
        ^

2 errors detected in the compilation of "../chapters/01_transfers/exercise.cu".
ninja: build stopped: subcommand failed.
"""

LINK_OUTPUT = """\
[8/9] Linking target chapters/ch01
FAILED: chapters/ch01
/usr/bin/ld: chapters/libch01_learner.a(exercise.cu.o): in function `main':
tmpxft_00001672-6_exercise.cudafe1.cpp:(.text+0x33): undefined reference to `cml::copy_pinned()'
collect2: error: ld returned 1 exit status
ninja: build stopped: subcommand failed.
"""


class LabCopy:
    """A throw-away copy of the parts of the checkout ./lab reads, with its own state dir."""

    def __init__(self):
        self.tmp = Path(tempfile.mkdtemp(prefix="cml-lab-test-"))
        self.root = self.tmp / "repo"
        self.root.mkdir()
        shutil.copy2(LAB, self.root / "lab")
        shutil.copytree(REPO / "labkit", self.root / "labkit",
                        ignore=shutil.ignore_patterns("__pycache__"))
        shutil.copy2(REPO / "chapters.txt", self.root / "chapters.txt")
        for folder in ("chapters", "solutions"):
            if (REPO / folder).is_dir():
                shutil.copytree(REPO / folder, self.root / folder)
        self.state = self.tmp / "state"
        self.chapters = chapters.load_chapters(self.root)
        if not self.chapters:
            raise unittest.SkipTest("chapters.txt lists no chapter")
        self.first = self.chapters[0]
        # Our own sample files: the tests must not depend on the chapter's real contents.
        self.first.folder.mkdir(parents=True, exist_ok=True)
        self.first.solution.parent.mkdir(parents=True, exist_ok=True)
        self.first.exercise.write_text(STARTER)
        self.first.solution.write_text(SOLUTION)
        self.first.hints.write_text(SAMPLE_HINTS)

    def env(self):
        env = {k: v for k, v in os.environ.items() if not k.startswith("CML_")}
        env.update(CML_LAB_STATE_DIR=str(self.state), CML_LAB_NO_INSTALL="1", NO_COLOR="1")
        return env

    def run(self, *args, cwd=None):
        """Runs the copy's ./lab; a hang would be a bug, so it gets a short timeout."""
        return subprocess.run([sys.executable, str(self.root / "lab"), *args],
                              cwd=cwd or self.root, env=self.env(), capture_output=True,
                              text=True, timeout=60)

    def state_json(self):
        return json.loads((self.state / "state.json").read_text())

    def cleanup(self):
        shutil.rmtree(self.tmp, ignore_errors=True)


class LabTestCase(unittest.TestCase):
    def setUp(self):
        self.copy = LabCopy()
        self.addCleanup(self.copy.cleanup)
        self.num = self.copy.first.num

    def lab(self, *args, **kw):
        return self.copy.run(*args, **kw)


class TestCommandLine(LabTestCase):
    def test_help_exits_0_and_lists_every_command(self):
        r = self.lab("--help")
        self.assertEqual(r.returncode, 0, r.stderr)
        for name in cli.COMMANDS:
            self.assertRegex(r.stdout, rf"(?m)^  {name}\s+\S", name)

    def test_each_command_help_exits_0(self):
        for name in cli.COMMANDS:
            with self.subTest(command=name):
                r = self.lab(name, "--help")
                self.assertEqual(r.returncode, 0, r.stderr)
                self.assertIn(f"./lab {name}", r.stdout)

    def test_unknown_command_exits_2_with_one_line(self):
        r = self.lab("frobnicate")
        self.assertEqual(r.returncode, 2)
        self.assertEqual(r.stdout, "")
        self.assertEqual(len(r.stderr.strip().splitlines()), 1, r.stderr)
        self.assertIn("frobnicate", r.stderr)

    def test_unknown_option_exits_2_with_one_line(self):
        for args in (["--frobnicate"], ["hint", self.num, "--frobnicate"], ["hint", self.num, "--step", "x"]):
            with self.subTest(args=args):
                r = self.lab(*args)
                self.assertEqual(r.returncode, 2)
                self.assertEqual(len(r.stderr.strip().splitlines()), 1, r.stderr)

    def test_missing_chapter_argument_exits_2(self):
        r = self.lab("hint")
        self.assertEqual(r.returncode, 2)
        self.assertEqual(len(r.stderr.strip().splitlines()), 1, r.stderr)

    def test_unknown_chapter_exits_2(self):
        for spec in ("99", "nosuch", "01_nosuch"):
            with self.subTest(chapter=spec):
                r = self.lab("hint", spec)
                self.assertEqual(r.returncode, 2)
                self.assertEqual(len(r.stderr.strip().splitlines()), 1, r.stderr)
                self.assertIn(spec, r.stderr)

    def test_program_arguments_outside_dashdash_exit_2_before_building(self):
        r = self.lab("run", self.num, "--size=64M")
        self.assertEqual(r.returncode, 2)
        self.assertIn("--", r.stderr)
        self.assertFalse((self.copy.root / "build").exists())

    def test_split_passthrough(self):
        self.assertEqual(run.split_passthrough(["01", "--solution", "--", "--size=64M", "--"]),
                         (["01", "--solution"], ["--size=64M", "--"]))
        self.assertEqual(run.split_passthrough(["01"]), (["01"], []))


class TestChapters(LabTestCase):
    def test_chapter_name_forms_resolve(self):
        ch = self.copy.first
        forms = [ch.num, str(int(ch.num)), ch.name, ch.topic, ch.name.upper(), f"ch{ch.num}"]
        for form in forms:
            with self.subTest(form=form):
                self.assertEqual(chapters.resolve_chapter(form, self.copy.chapters).name, ch.name)
                r = self.lab("diff", form)
                self.assertEqual(r.returncode, 0, r.stderr)
                self.assertIn(ch.exercise_rel, r.stdout)

    def test_chapters_txt_parses_with_titles(self):
        for ch in chapters.load_chapters(REPO):
            self.assertRegex(ch.name, r"^\d\d_\w+$")
            self.assertTrue(ch.title, ch.name)

    def test_table_lists_chapters_before_configure(self):
        r = self.lab()
        self.assertEqual(r.returncode, 0, r.stderr)
        for ch in self.copy.chapters:
            self.assertIn(ch.num, r.stdout)
            self.assertIn(ch.title, r.stdout)
        self.assertIn(f"0 of {len(self.copy.chapters)} chapters passed", r.stdout)
        self.assertIn("not started", r.stdout)
        self.assertFalse((self.copy.root / "build").exists(), "the table must not configure")
        self.assertFalse((self.copy.root / ".lab").exists(), "the table must not write state")

    def test_table_shows_each_state(self):
        name = self.copy.first.name
        cases = [({"state": "passed"}, "passed", 1),
                 ({"state": "failing", "step": 2, "steps_passed": 1, "steps_total": 3},
                  "failing at step 2", 0),
                 ({"state": "skipped", "reason": "no CUDA device"}, "skipped: no CUDA device", 0)]
        for entry, text, passed in cases:
            with self.subTest(state=entry["state"]):
                self.copy.state.mkdir(exist_ok=True)
                (self.copy.state / "state.json").write_text(json.dumps({"chapters": {name: entry}}))
                r = self.lab()
                self.assertEqual(r.returncode, 0, r.stderr)
                self.assertIn(text, r.stdout)
                self.assertIn(f"{passed} of {len(self.copy.chapters)} chapters passed", r.stdout)

    def test_works_from_any_folder_of_the_checkout(self):
        r = self.lab(cwd=self.copy.first.folder)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn(self.copy.first.title, r.stdout)

    def test_next_names_the_first_chapter_not_passed(self):
        r = self.lab("next")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn(f"./lab run {self.num}", r.stdout)
        self.assertIn(f"./lab check {self.num}", r.stdout)
        self.assertIn("README.md", r.stdout)

    def test_unreadable_state_is_ignored_with_a_note(self):
        self.copy.state.mkdir()
        (self.copy.state / "state.json").write_text("{not json")
        r = self.lab()
        self.assertEqual(r.returncode, 0)
        self.assertIn("ignoring", r.stderr)


class TestHints(LabTestCase):
    def test_hint_shows_hints_in_order_and_remembers(self):
        titles = ["pinned memory: where to start", "overlap: streams", "overlap: the last chunk"]
        for i, title in enumerate(titles, 1):
            r = self.lab("hint", self.num)
            self.assertEqual(r.returncode, 0, r.stderr)
            self.assertIn(f"hint {i} of 3", r.stdout)
            self.assertIn(title, r.stdout)
            for other in titles[:i - 1] + titles[i:]:
                self.assertNotIn(other, r.stdout)
        self.assertEqual(self.copy.state_json()["hints_shown"][self.copy.first.name], 3)
        r = self.lab("hint", self.num)
        self.assertEqual(r.returncode, 0)
        self.assertIn("no more hints", r.stdout)
        self.assertIn(f"./lab diff {self.num}", r.stdout)
        self.assertFalse((self.copy.root / ".lab").exists(), "state must go to CML_LAB_STATE_DIR")

    def test_hint_reset_starts_over(self):
        self.lab("hint", self.num)
        self.lab("hint", self.num)
        self.assertEqual(self.lab("hint", self.num, "--reset").returncode, 0)
        r = self.lab("hint", self.num)
        self.assertIn("hint 1 of 3", r.stdout)

    def test_hint_step_shows_that_steps_hints_one_at_a_time(self):
        r = self.lab("hint", self.num, "--step", "2")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("overlap: streams", r.stdout)
        self.assertNotIn("pinned memory", r.stdout)
        self.assertIn(f"./lab hint {self.num} --step 2", r.stdout)
        r = self.lab("hint", self.num, "--step", "2")
        self.assertIn("overlap: the last chunk", r.stdout)
        self.assertNotIn("overlap: streams", r.stdout)
        r = self.lab("hint", self.num, "--step", "2")
        self.assertIn("no more hints for step 2 of chapter", r.stdout)
        self.assertIn(f"./lab diff {self.num} --step 2", r.stdout)
        # The chapter's own sequence is not moved by a step's hints.
        self.assertIn("hint 1 of 3", self.lab("hint", self.num).stdout)
        r = self.lab("hint", self.num, "--step", "9")
        self.assertEqual(r.returncode, 2)

    def test_hint_step_all_shows_only_that_step(self):
        r = self.lab("hint", self.num, "--step", "2", "--all")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("overlap: streams", r.stdout)
        self.assertIn("overlap: the last chunk", r.stdout)
        self.assertNotIn("pinned memory", r.stdout)

    def test_hint_all_shows_every_hint(self):
        r = self.lab("hint", self.num, "--all")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("hint 3 of 3", r.stdout)
        self.assertIn("Allocate the host buffer", r.stdout)

    def test_parse_hints_reads_steps_and_bodies(self):
        parsed = hints.parse_hints(SAMPLE_HINTS)
        self.assertEqual([h.step for h in parsed], [1, 2, 2])
        self.assertEqual(parsed[0].body, "Allocate the host buffer with cudaMallocHost.")

    def test_missing_hints_file_is_one_line(self):
        self.copy.first.hints.unlink()
        r = self.lab("hint", self.num)
        self.assertEqual(r.returncode, 1)
        self.assertEqual(len(r.stderr.strip().splitlines()), 1)


class TestDiffAndReset(LabTestCase):
    def test_diff_output_marks_differences(self):
        r = self.lab("diff", self.num)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("\n-  // TODO(1): copy", r.stdout)
        self.assertIn("\n+  cudaMemcpyAsync(dst, src, n, cudaMemcpyHostToDevice, s);", r.stdout)
        self.assertIn("@@", r.stdout)
        self.assertNotIn("\033[", r.stdout, "no colour when not on a terminal")

    def test_diff_of_identical_files_says_so(self):
        self.copy.first.exercise.write_text(SOLUTION)
        r = self.lab("diff", self.num)
        self.assertEqual(r.returncode, 0)
        self.assertIn("identical", r.stdout)

    def git(self, *args):
        r = subprocess.run(["git", "-C", str(self.copy.root), "-c", "user.name=t", "-c",
                            "user.email=t@example.com", *args], capture_output=True, text=True)
        self.assertEqual(r.returncode, 0, r.stderr)

    def test_reset_keeps_a_backup_and_restores_the_starter(self):
        if shutil.which("git") is None:
            self.skipTest("git is not installed")
        self.git("init", "-q")
        self.git("add", self.copy.first.exercise_rel)
        self.git("commit", "-q", "-m", "starter")
        mine = "// my work in progress\n"
        self.copy.first.exercise.write_text(mine)
        r = self.lab("reset", self.num)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(self.copy.first.exercise.read_text(), STARTER)
        backups = list((self.copy.state / "backups").glob(f"{self.copy.first.name}-exercise.cu.*"))
        self.assertEqual(len(backups), 1)
        self.assertRegex(backups[0].name, r"\.\d{8}-\d{6}$")
        self.assertEqual(backups[0].read_text(), mine)
        self.assertIn(backups[0].name, r.stdout)
        # A second reset has nothing to replace, so it writes no second backup.
        r = self.lab("reset", self.num)
        self.assertEqual(r.returncode, 0)
        self.assertEqual(len(list((self.copy.state / "backups").iterdir())), 1)

    def test_reset_refuses_when_git_has_no_starter(self):
        mine = "// my work\n"
        self.copy.first.exercise.write_text(mine)
        r = self.lab("reset", self.num)   # the copy is not a git repository
        self.assertEqual(r.returncode, 2)
        self.assertEqual(len(r.stderr.strip().splitlines()), 1, r.stderr)
        self.assertEqual(self.copy.first.exercise.read_text(), mine)


class TestSassTools(unittest.TestCase):
    def test_sass_tools_found_beside_each_other_install_nothing(self):
        with tempfile.TemporaryDirectory() as d:
            bin_dir = Path(d) / "bin"
            bin_dir.mkdir()
            for tool in ("cuobjdump", "nvdisasm"):
                (bin_dir / tool).write_text("#!/bin/sh\n")
            tc = toolchain.Toolchain(root=Path(d), env={"PATH": str(bin_dir)})
            err = io.StringIO()
            old = sys.stderr
            sys.stderr = err
            try:
                selftest.ensure_sass_tools(tc, Path(d))
            finally:
                sys.stderr = old
            self.assertEqual(err.getvalue(), "")
            self.assertFalse((Path(d) / ".venv").exists())

    def test_sass_tools_missing_without_installs_is_a_note_not_an_error(self):
        with tempfile.TemporaryDirectory() as d:
            tc = toolchain.Toolchain(root=Path(d), env={"PATH": d})
            old_env = os.environ.get("CML_LAB_NO_INSTALL")
            os.environ["CML_LAB_NO_INSTALL"] = "1"
            err = io.StringIO()
            old = sys.stderr
            sys.stderr = err
            try:
                if Path("/usr/local/cuda/bin/cuobjdump").exists() and Path("/usr/local/cuda/bin/nvdisasm").exists():
                    self.skipTest("this machine's toolkit has cuobjdump and nvdisasm")
                selftest.ensure_sass_tools(tc, Path(d))
            finally:
                sys.stderr = old
                if old_env is None:
                    os.environ.pop("CML_LAB_NO_INSTALL", None)
                else:
                    os.environ["CML_LAB_NO_INSTALL"] = old_env
            self.assertIn("SASS checks will skip", err.getvalue())
            self.assertFalse((Path(d) / ".venv").exists())


class TestParsers(unittest.TestCase):
    def test_meson_summary_parser_gives_the_final_line(self):
        counts = selftest.parse_meson_summary(SUMMARY_MIXED)
        self.assertEqual(counts, {"Ok": 1, "Expected Fail": 1, "Fail": 1, "Unexpected Pass": 1,
                                  "Skipped": 1, "Timeout": 1})
        self.assertEqual(selftest.final_line(counts), "2 passed, 3 failed, 1 skipped")
        self.assertEqual(selftest.final_line(selftest.parse_meson_summary(SUMMARY_CI)),
                         "2 passed, 0 failed, 2 skipped")

    def test_meson_summary_parser_without_summary(self):
        self.assertIsNone(selftest.parse_meson_summary("No suitable tests defined.\n"))

    def test_junit_v2_is_parsed_into_steps(self):
        cases = junit.parse_junit(JUNIT_V2)
        by_name = {c.name: c for c in cases}
        self.assertEqual(by_name["step 1: sizes/not round/odd N"].status, "passed")
        self.assertEqual(by_name["step 2: copies use pinned memory"].status, "failed")
        self.assertEqual(by_name["step 3: zero-copy"].status, "skipped")
        self.assertEqual(by_name["step 3: zero-copy"].message, "no canMapHostMemory on this GPU")
        self.assertEqual(by_name["step 5: throws"].status, "failed")
        steps = junit.group_steps(cases)
        self.assertEqual([(s.number, s.state) for s in steps],
                         [(1, "passed"), (2, "failed"), (3, "skipped"), (4, "failed"),
                          (5, "failed"), (None, "passed")])
        res = check.interpret_check(1, JUNIT_V2, "")
        self.assertEqual(res.code, 1)
        self.assertEqual(res.state["state"], "failing")
        self.assertEqual(res.state["step"], 2)
        self.assertEqual(res.state["steps_passed"], 1)
        self.assertEqual(res.state["steps_total"], 5)
        text = "\n".join(check.readable_failure(res.first_failure.message, Path("/work/main")))
        self.assertIn("allocate the host buffer with cudaMallocHost", text)
        self.assertIn("at tests/test_01_transfers.cpp:13", text)
        self.assertNotIn("FAILED:", text)

    def test_junit_v3_is_parsed_into_steps(self):
        cases = junit.parse_junit(JUNIT_V3)
        steps = junit.group_steps(cases)
        self.assertEqual([(s.number, s.state) for s in steps],
                         [(1, "passed"), (2, "failed"), (3, "skipped")])
        self.assertEqual(steps[2].cases[0].message, "ncu counters need root (RmProfilingAdminOnly=1)")
        res = check.interpret_check(1, JUNIT_V3, "")
        self.assertEqual(res.first_failure.name, "step 2: staged copies overlap")
        text = "\n".join(check.readable_failure(res.first_failure.message, Path("/work/main")))
        self.assertIn("copies ran on the NULL stream", text)

    def test_check_passes_with_skips_noted(self):
        res = check.interpret_check(0, JUNIT_V3_PASS, "")
        self.assertEqual((res.code, res.state["state"], res.state["steps_passed"]), (0, "passed", 2))
        # v2 skip printed by the program, not in the report: passed, but the skip is shown.
        res = check.interpret_check(0, JUNIT_V3_PASS, "SKIP: needs asyncEngineCount >= 2\n")
        self.assertEqual(res.state["skipped_tests"], 1)
        self.assertTrue(any("asyncEngineCount" in n for n in res.notes))

    def test_check_without_gpu_is_a_skip_with_its_reason(self):
        res = check.interpret_check(77, None, "SKIP: no CUDA device: cudaErrorNoDevice\n")
        self.assertEqual(res.code, 77)
        self.assertEqual(res.state, {"state": "skipped", "reason": "no CUDA device: cudaErrorNoDevice",
                                     "steps_passed": 0, "steps_total": 0})

    def test_check_that_crashed_without_report_fails(self):
        res = check.interpret_check(-11, None, "Segmentation fault\n")
        self.assertEqual(res.code, 1)
        self.assertEqual(res.state["state"], "failing")
        self.assertTrue(any("SIGSEGV" in n for n in res.notes))

    def test_compile_errors_show_the_learners_lines_first(self):
        lines = diagnostics.extract_compile_errors(NVCC_OUTPUT, "chapters/01_transfers/exercise.cu")
        self.assertEqual(lines[0], 'chapters/01_transfers/exercise.cu:2: error: identifier "y" is undefined')
        self.assertTrue(any(l.startswith("chapters/01_transfers/exercise.cu:3: error:") for l in lines))
        self.assertFalse(any("stl_vector.h" in l for l in lines), "no header notes")
        self.assertLessEqual(len(lines), core.MAX_ERROR_LINES + 1)

    def test_link_errors_are_shown_when_no_line_names_the_file(self):
        lines = diagnostics.extract_compile_errors(LINK_OUTPUT, "chapters/01_transfers/exercise.cu")
        self.assertTrue(any("undefined reference" in l for l in lines))
        self.assertFalse(any(l.startswith("ninja:") for l in lines))

    def test_long_error_lists_are_cut(self):
        many = "".join(f"../chapters/01_transfers/exercise.cu({i}): error: bad\n" for i in range(50))
        lines = diagnostics.extract_compile_errors(many, "chapters/01_transfers/exercise.cu")
        self.assertEqual(len(lines), core.MAX_ERROR_LINES + 1)
        self.assertIn("30 more lines", lines[-1])

    def test_colour_only_on_a_terminal_without_no_color(self):
        class Tty(io.StringIO):
            def isatty(self):
                return True
        saved = os.environ.pop("NO_COLOR", None)
        try:
            self.assertTrue(terminal.use_colour(Tty()))
            self.assertFalse(terminal.use_colour(io.StringIO()))
            os.environ["NO_COLOR"] = "1"
            self.assertFalse(terminal.use_colour(Tty()))
        finally:
            os.environ.pop("NO_COLOR", None)
            if saved is not None:
                os.environ["NO_COLOR"] = saved

    def test_meson_test_command_suites(self):
        tc = toolchain.Toolchain(root=Path("/r"), meson="meson")
        cmd = selftest.meson_test_command(tc, None, False)
        self.assertEqual(cmd[cmd.index("--num-processes") + 1], str(os.cpu_count() or 1))
        self.assertEqual([cmd[i + 1] for i, c in enumerate(cmd) if c == "--suite"], ["cpu", "solutions"])
        cmd = selftest.meson_test_command(tc, None, True)
        self.assertIn("starters", cmd)
        cmd = selftest.meson_test_command(tc, "memcheck", False)
        self.assertEqual([cmd[i + 1] for i, c in enumerate(cmd) if c == "--suite"], ["solutions"])
        self.assertEqual(cmd[cmd.index("--setup") + 1], "memcheck")

    def test_version_tuple(self):
        self.assertEqual(toolchain.version_tuple("1.13.2.git.kitware.jobserver-pipe-1"), (1, 13, 2))
        self.assertGreaterEqual(toolchain.version_tuple("meson 1.3.0"), toolchain.MIN_MESON)
        self.assertLess(toolchain.version_tuple("1.0.1"), toolchain.MIN_MESON)


if __name__ == "__main__":
    unittest.main()
