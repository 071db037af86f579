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
os.chdir(REPO)   # as a learner runs lab: from the checkout's root (./lab, not ../lab)


sys.path.insert(0, str(REPO))
from labkit import (bench, build, chapters, check, cli, core, diagnostics, diff, doctor, hints, junit,  # noqa: E402
                    no_gpu, readme, run, sass_tools, selftest, source, steps, terminal, toolchain, watch)

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

# A real nvcc log (CUDA 13.0, g++ 12's headers), shortened: std::sort on a std::map in
# chapter 09's exercise.cu fails inside stl_algo.h; only the instantiation chains name the
# learner's line (after a note, or right after the error's own lines).
NVCC_SORT_OUTPUT = """\
[1/3] Compiling Cuda object chapters/libch09_exercise_learner.a.p/09_sgemm_exercise.cu.o
FAILED: chapters/libch09_exercise_learner.a.p/09_sgemm_exercise.cu.o
/usr/include/c++/12/bits/stl_algo.h(1938): error: no operator "-" matches these operands
            operand types are: std::_Rb_tree_iterator<std::pair<const int, int>> - std::_Rb_tree_iterator<std::pair<const int, int>>
      std::__lg(__last - __first) * 2,
                       ^
/usr/include/c++/12/bits/stl_iterator.h(1778): note #3327-D: candidate function template "std::operator-(const std::move_iterator<_IteratorL> &, const std::move_iterator<_IteratorR> &)->decltype((<expression>))" failed deduction
      operator-(const move_iterator<_IteratorL>& __x,
      ^
          detected during:
            instantiation of "void std::__sort(_RandomAccessIterator, _RandomAccessIterator, _Compare) [with _RandomAccessIterator=std::_Rb_tree_iterator<std::pair<const int, int>>, _Compare=__gnu_cxx::__ops::_Iter_less_iter]" at line 4820
            instantiation of "void std::sort(_RAIter, _RAIter) [with _RAIter=std::_Rb_tree_iterator<std::pair<const int, int>>]" at line 5 of ../chapters/09_sgemm/exercise.cu

/usr/include/c++/12/bits/stl_algo.h(1814): error: function "std::pair<_T1, _T2>::operator=(const std::pair<const int, int> &) [with _T1=const int, _T2=int]" (declared implicitly) cannot be referenced -- it is a deleted function
         *__first = std::move(__val);
                  ^
          detected during:
            instantiation of "void std::__insertion_sort(_RandomAccessIterator, _RandomAccessIterator, _Compare) [with _RandomAccessIterator=std::_Rb_tree_iterator<std::pair<const int, int>>, _Compare=__gnu_cxx::__ops::_Iter_less_iter]" at line 1854
            instantiation of "void std::sort(_RAIter, _RAIter) [with _RAIter=std::_Rb_tree_iterator<std::pair<const int, int>>]" at line 5 of ../chapters/09_sgemm/exercise.cu

2 errors detected in the compilation of "../chapters/09_sgemm/exercise.cu".
ninja: build stopped: subcommand failed.
"""

# g++ 12 on the same mistake: the chain comes before the error and ends `required from here`.
GCC_SORT_OUTPUT = """\
In file included from /usr/include/c++/12/algorithm:61,
                 from ../chapters/09_sgemm/exercise.cu:1:
/usr/include/c++/12/bits/stl_algo.h: In instantiation of \u2018void std::__sort(_RandomAccessIterator, _RandomAccessIterator, _Compare) [with _RandomAccessIterator = _Rb_tree_iterator<pair<const int, int> >; _Compare = __gnu_cxx::__ops::_Iter_less_iter]\u2019:
/usr/include/c++/12/bits/stl_algo.h:4820:18:   required from \u2018void std::sort(_RAIter, _RAIter) [with _RAIter = _Rb_tree_iterator<pair<const int, int> >]\u2019
../chapters/09_sgemm/exercise.cu:5:12:   required from here
/usr/include/c++/12/bits/stl_algo.h:1938:50: error: no match for \u2018operator-\u2019 (operand types are \u2018std::_Rb_tree_iterator<std::pair<const int, int> >\u2019 and \u2018std::_Rb_tree_iterator<std::pair<const int, int> >\u2019)
 1938 |                                 std::__lg(__last - __first) * 2,
      |                                           ~~~~~~~^~~~~~~~~
/usr/include/c++/12/bits/stl_iterator.h:621:5: note: candidate: \u2018template<class _IteratorL, class _IteratorR> constexpr decltype ((__y.base() - __x.base())) std::operator-(const reverse_iterator<_Iterator>&, const reverse_iterator<_IteratorR>&)\u2019
  621 |     operator-(const reverse_iterator<_IteratorL>& __x,
      |     ^~~~~~~~
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

    def test_program_arguments_tip_names_the_chapter_and_keeps_lab_options(self):
        r = self.lab("run", str(int(self.num)), "extra")
        self.assertEqual(r.returncode, 2)
        self.assertIn(f"(program arguments go after --: ./lab run {self.num} -- extra)", r.stderr)
        r = self.lab("bench", "--solution", self.num, "--csv", "--out", "x")
        self.assertIn(f"./lab bench --solution {self.num} --out x -- --csv)", r.stderr)
        r = self.lab("run", "extra", self.num)           # the chapter is the mistake there
        self.assertEqual(r.returncode, 2)
        self.assertIn("no chapter 'extra'", r.stderr)
        self.assertNotIn("NN", r.stderr)

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
            self.assertIn(ch.title.split(": ")[0][:40], r.stdout)    # 80 columns: the short titles
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

    def test_table_fits_80_columns_and_says_no_gpu_once(self):
        no_gpu_reason = "no CUDA device: no NVIDIA driver (libcuda.so.1 not found)"
        entries = {ch.name: {"state": "skipped", "reason": f"needs a GPU: {no_gpu_reason}", "compiles": True}
                   for ch in self.copy.chapters}
        last = self.copy.chapters[-1].name
        entries[last]["reason"] += "; the compiled code of step 2 fails its check"
        self.copy.state.mkdir(exist_ok=True)
        (self.copy.state / "state.json").write_text(json.dumps({"chapters": entries}))
        env = dict(self.copy.env(), COLUMNS="80")
        r = subprocess.run([sys.executable, str(self.copy.root / "lab")], cwd=self.copy.root, env=env,
                           capture_output=True, text=True, timeout=60)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual([l for l in r.stdout.splitlines() if len(l) > 80], [])
        self.assertEqual(r.stdout.count(no_gpu_reason), 1, r.stdout)
        self.assertIn(f"no GPU here: {no_gpu_reason}", r.stdout)
        self.assertIn("skipped: no GPU; step 2's SASS fails", r.stdout)
        for ch in self.copy.chapters:
            self.assertIn(f"  {ch.num}  {ch.title.split(': ')[0][:20]}", r.stdout)
        wide = subprocess.run([sys.executable, str(self.copy.root / "lab")], cwd=self.copy.root,
                              env=dict(env, COLUMNS="300"), capture_output=True, text=True, timeout=60)
        for ch in self.copy.chapters:
            self.assertIn(ch.title, wide.stdout)        # room enough: the whole titles

    def test_works_from_any_folder_of_the_checkout(self):
        r = self.lab(cwd=self.copy.first.folder)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn(self.copy.first.title.split(": ")[0], r.stdout)

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
                sass_tools.ensure_sass_tools(tc, Path(d))
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
                sass_tools.ensure_sass_tools(tc, Path(d))
            finally:
                sys.stderr = old
                if old_env is None:
                    os.environ.pop("CML_LAB_NO_INSTALL", None)
                else:
                    os.environ["CML_LAB_NO_INSTALL"] = old_env
            self.assertIn("SASS checks will skip", err.getvalue())
            self.assertFalse((Path(d) / ".venv").exists())

    def test_sass_tools_are_found_where_the_sass_checks_look(self):
        with tempfile.TemporaryDirectory() as d:
            venv_bin = Path(d) / ".venv" / "lib" / "python3.9" / "site-packages" / "nvidia" / "cu13" / "bin"
            chosen = Path(d) / "chosen"
            for folder in (venv_bin, chosen):
                folder.mkdir(parents=True)
                for tool in ("cuobjdump", "nvdisasm"):
                    (folder / tool).write_text("#!/bin/sh\n")
            env = {"PATH": d}
            if all((sass_tools.CUDA_DEFAULT_BIN / tool).is_file() for tool in ("cuobjdump", "nvdisasm")):
                self.skipTest("this machine's toolkit has cuobjdump and nvdisasm: they come before .venv")
            self.assertEqual(sass_tools.find_sass_tools(env, Path(d)), venv_bin)
            env["CML_CUOBJDUMP"] = str(chosen / "cuobjdump")
            self.assertEqual(sass_tools.find_sass_tools(env, Path(d)), chosen)
            (venv_bin / "nvdisasm").unlink()          # cuobjdump alone cannot disassemble
            self.assertIsNone(sass_tools.find_sass_tools({"PATH": d}, Path(d)))

    def test_run_check_and_watch_install_what_the_sass_checks_need(self):
        """The first command a new learner types installs cuobjdump, so the first check checks."""
        class Installed(Exception):
            pass

        def ensure(tc, root, why="", note_missing=True):
            raise Installed(why)
        copy = LabCopy()
        self.addCleanup(copy.cleanup)
        args = type("Args", (), {"chapter": copy.first.num, "solution": False, "verbose": False,
                                 "program_args": []})()
        for module, command in ((run, run.cmd_run), (check, check.cmd_check), (watch, watch.cmd_watch)):
            with self.subTest(command=command.__name__):
                saved = module.setup, module.ensure_sass_tools
                module.setup = lambda *a, **kw: toolchain.Toolchain(root=copy.root, env={})
                module.ensure_sass_tools = ensure
                try:
                    with self.assertRaises(Installed):
                        command(args, copy.root)
                finally:
                    module.setup, module.ensure_sass_tools = saved
                    terminal._progress[0] = "stdout"      # cmd_run sends progress to stderr

    def test_doctor_says_where_the_sass_tools_are_or_how_to_get_them(self):
        with tempfile.TemporaryDirectory() as d:
            tc = toolchain.Toolchain(root=Path(d), env={"PATH": d})
            if sass_tools.find_sass_tools(tc.env, Path(d)) is None:
                _, out, _ = capture(doctor._profilers, Path(d), tc)
                self.assertRegex(out, r"cuobjdump, nvdisasm\s+MISSING")
                self.assertIn("./lab run or ./lab check installs them", out)
                self.assertIn(sass_tools.INSTALL_COMMAND, out)
            for tool in ("cuobjdump", "nvdisasm"):
                (Path(d) / tool).write_text("#!/bin/sh\n")
            _, out, _ = capture(doctor._profilers, Path(d), tc)
            self.assertRegex(out, r"cuobjdump, nvdisasm\s+ok\s+in ")


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

    def test_meson_test_command_chapters_and_repeat(self):
        tc = toolchain.Toolchain(root=Path("/r"), meson="meson")
        cmd = selftest.meson_test_command(tc, None, False, ["04", "09"], 5)
        self.assertEqual(cmd[cmd.index("--repeat") + 1], "5")
        self.assertNotIn("--suite", cmd)
        self.assertEqual(cmd[-2:], ["ch04 solution", "ch09 solution"])
        cmd = selftest.meson_test_command(tc, None, True, ["09"])
        self.assertNotIn("--repeat", cmd)
        self.assertEqual(cmd[-2:], ["ch09 solution", "ch09 starter fails"])
        cmd = selftest.meson_test_command(tc, "racecheck", False, ["07"])
        self.assertEqual(cmd[cmd.index("--setup") + 1], "racecheck")
        self.assertEqual(cmd[-1], "ch07 solution")

    def test_lab_test_refuses_a_bad_repeat_or_chapter_before_building(self):
        for argv, words in ((["test", "--repeat", "0"], "1 or more"), (["test", "--repeat", "x"], "1 or more"),
                            (["test", "99"], "no chapter")):
            r = subprocess.run([sys.executable, str(LAB), *argv], capture_output=True, text=True, timeout=60)
            self.assertEqual(r.returncode, 2, argv)
            self.assertIn(words, r.stdout + r.stderr, argv)
            self.assertNotIn("building everything", r.stdout, argv)

    def test_version_tuple(self):
        self.assertEqual(toolchain.version_tuple("1.13.2.git.kitware.jobserver-pipe-1"), (1, 13, 2))
        self.assertGreaterEqual(toolchain.version_tuple("meson 1.3.0"), toolchain.MIN_MESON)
        self.assertLess(toolchain.version_tuple("1.0.1"), toolchain.MIN_MESON)



# --------------------------------------------------------------------------------------
# The learner's loop (issue 9): each rough edge found by trying it as a new user would
# --------------------------------------------------------------------------------------

def capture(fn, *args, **kw):
    """(return value, stdout, stderr) of a call that prints."""
    out, err = io.StringIO(), io.StringIO()
    old = sys.stdout, sys.stderr
    sys.stdout, sys.stderr = out, err
    try:
        value = fn(*args, **kw)
    finally:
        sys.stdout, sys.stderr = old
    return value, out.getvalue(), err.getvalue()


class TestWhereTheLearnerIs(LabTestCase):
    def test_commands_printed_from_a_chapter_folder_are_typed_from_there(self):
        r = self.lab("hint", self.num, cwd=self.copy.first.folder)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn(f"../../lab hint {self.num}", r.stdout)
        self.assertNotIn(f" ./lab hint", r.stdout)

    def test_paths_printed_from_a_chapter_folder_resolve_from_there(self):
        cwd = os.getcwd()
        os.chdir(REPO / "chapters")
        try:
            self.assertEqual(terminal.display_path(REPO / ".lab" / "x.log"), "../.lab/x.log")
            self.assertEqual(terminal.display_path(REPO / "chapters" / "a.cu"), "a.cu")
        finally:
            os.chdir(cwd)

    def test_screen_control_only_on_a_terminal_that_has_it(self):
        class Tty(io.StringIO):
            def isatty(self):
                return True
        saved_term, saved_out = os.environ.get("TERM"), sys.stdout
        try:
            for term, tty, cleared in (("xterm", True, True), ("dumb", True, False), ("xterm", False, False)):
                with self.subTest(term=term, tty=tty):
                    os.environ["TERM"] = term
                    sys.stdout = Tty() if tty else io.StringIO()
                    terminal.clear_screen()
                    self.assertEqual("\033[" in sys.stdout.getvalue(), cleared)
        finally:
            sys.stdout = saved_out
            if saved_term is None:
                os.environ.pop("TERM", None)
            else:
                os.environ["TERM"] = saved_term

    def test_a_dumb_terminal_gets_no_colour(self):
        class Tty(io.StringIO):
            def isatty(self):
                return True
        saved = {k: os.environ.get(k) for k in ("TERM", "NO_COLOR")}
        os.environ.pop("NO_COLOR", None)
        try:
            os.environ["TERM"] = "xterm"
            self.assertNotEqual(terminal.paint("x", "red", Tty()), "x")
            os.environ["TERM"] = "dumb"
            self.assertEqual(terminal.paint("x", "red", Tty()), "x")
        finally:
            for k, v in saved.items():
                if v is None:
                    os.environ.pop(k, None)
                else:
                    os.environ[k] = v


class TestLearnerCommands(LabTestCase):
    def test_help_command_prints_that_commands_help(self):
        r = self.lab("help", "run")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("usage: ./lab run", r.stdout)
        self.assertIn("--solution", r.stdout)
        self.assertNotIn("commands:", r.stdout)
        self.assertIn("commands:", self.lab("help").stdout)
        r = self.lab("help", "frobnicate")
        self.assertEqual(r.returncode, 2)
        self.assertEqual(len(r.stderr.strip().splitlines()), 1, r.stderr)

    def test_list_is_the_chapter_table(self):
        r = self.lab("list")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(r.stdout, self.lab().stdout)

    def test_sanitizer_setup_without_compute_sanitizer_is_one_line_and_77(self):
        if Path("/usr/local/cuda/bin/compute-sanitizer").exists():
            self.skipTest("this machine's toolkit has compute-sanitizer")
        env_path = os.pathsep.join(d for d in os.environ.get("PATH", "").split(os.pathsep)
                                   if d and not (Path(d) / "compute-sanitizer").exists())
        r = subprocess.run([sys.executable, str(self.copy.root / "lab"), "test", "--setup", "memcheck"],
                           cwd=self.copy.root, env=dict(self.copy.env(), PATH=env_path),
                           capture_output=True, text=True, timeout=60)
        self.assertEqual(r.returncode, 77, r.stdout + r.stderr)
        self.assertEqual(r.stdout, "")
        self.assertEqual(len(r.stderr.strip().splitlines()), 1, r.stderr)
        self.assertIn("compute-sanitizer", r.stderr)
        self.assertNotIn("Traceback", r.stderr)

    def test_bad_gpu_arch_is_refused_at_once(self):
        for bad in ("abc", "8x", "80,", "sm_9", "8.0.1", "gfx90a"):
            with self.subTest(value=bad):
                r = self.lab("setup", f"--gpu-arch={bad}")
                self.assertEqual(r.returncode, 2)
                self.assertEqual(len(r.stderr.strip().splitlines()), 1, r.stderr)
                self.assertIn("compute capability", r.stderr)
                self.assertFalse((self.copy.root / "build").exists())

    def test_gpu_arch_values(self):
        self.assertEqual(toolchain.parse_gpu_arch(" 80 , 90a "), "80,90a")
        self.assertEqual(toolchain.parse_gpu_arch("AUTO"), "auto")
        self.assertEqual(toolchain.parse_gpu_arch("100"), "100")
        with self.assertRaises(ValueError):
            toolchain.parse_gpu_arch("abc")
        # nvcc's, nvidia-smi's and NVIDIA's tables' spellings (the error message itself says sm_90)
        for spelled, meant in (("sm_90", "90"), ("sm90", "90"), ("compute_90", "90"), ("9.0", "90"),
                               ("SM_90a", "90a"), ("8.6, sm_90", "86,90"), ("10.0", "100"), ("90,sm_90", "90")):
            with self.subTest(value=spelled):
                self.assertEqual(toolchain.parse_gpu_arch(spelled), meant)


def difflib_lines(a: str, b: str) -> list:
    """The lines that differ between two texts (each with its + or -)."""
    import difflib
    return [l for l in difflib.unified_diff(a.splitlines(), b.splitlines(), lineterm="", n=0)
            if l[:1] in "+-" and not l.startswith(("+++", "---"))]


class TestDiffSteps(LabTestCase):
    STARTER = """// header: TODO(1) to TODO(2), a mention, not a mark
#include "api.cuh"

namespace ch01 {

// TODO(1): allocate pinned memory
void* allocate(std::size_t n) { return std::malloc(n); }

void release(void* p) { std::free(p); }

// TODO(2): copy it; TODO(1) is done above (a mention)
void copy(int* d, const int* h) {
  for (int i = 0; i < 4; ++i) d[i] = h[i];
}

}  // namespace ch01
"""
    SOLUTION = """#include "api.cuh"

namespace ch01 {

// Step 1.
void* allocate(std::size_t n) { void* p; CUDA_CHECK(cudaMallocHost(&p, n)); return p; }

void release(void* p) { CUDA_CHECK(cudaFreeHost(p)); }

namespace {
// A helper the solution added.
void copy_bytes(int* d, const int* h) { CUDA_CHECK(cudaMemcpy(d, h, 16, cudaMemcpyDefault)); }
}  // namespace

// Step 2.
void copy(int* d, const int* h) { copy_bytes(d, h); }

}  // namespace ch01
"""

    def setUp(self):
        super().setUp()
        self.copy.first.exercise.write_text(self.STARTER)
        self.copy.first.solution.write_text(self.SOLUTION)
        self.copy.first.readme.write_text(TestSteps.README)

    def test_steps_of_the_exercise(self):
        self.assertEqual(source.functions_by_step(self.STARTER), {1: ["allocate", "release"], 2: ["copy"]})

    def test_diff_step_shows_only_that_steps_functions_and_the_helpers_they_use(self):
        r = self.lab("diff", self.num, "--step", "2")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("+void copy_bytes(", r.stdout)
        self.assertIn("+void copy(int* d, const int* h) { copy_bytes(d, h); }", r.stdout)
        self.assertNotIn("allocate", r.stdout)
        self.assertNotIn("release", r.stdout)
        r = self.lab("diff", self.num, "--step", "1")
        self.assertIn("cudaMallocHost", r.stdout)
        self.assertNotIn("copy_bytes", r.stdout)
        r = self.lab("diff", self.num, "--step", "7")
        self.assertEqual(r.returncode, 2)
        self.assertEqual(len(r.stderr.strip().splitlines()), 1, r.stderr)
        self.assertIn("has no step 7 (steps: 1, 2)", r.stderr)

    def test_diff_step_follows_the_readme_table_not_the_todo_comments(self):
        """Learners edit and delete TODO comments: a step's functions come from the README."""
        before = {k: self.lab("diff", self.num, "--step", k).stdout for k in ("1", "2")}
        edited = self.STARTER.replace("// TODO(1): allocate pinned memory\n", "")
        edited = edited.replace("// TODO(2): copy it; TODO(1) is done above (a mention)", "// my own words")
        self.copy.first.exercise.write_text(edited)
        r = self.lab("diff", self.num, "--step", "1")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("step 1: allocate, release", r.stdout)
        self.assertIn("cudaMallocHost", r.stdout)
        self.assertNotIn("copy_bytes", r.stdout)
        r = self.lab("diff", self.num, "--step", "2")
        self.assertIn("step 2: copy", r.stdout)
        self.assertIn("+void copy(int* d, const int* h) { copy_bytes(d, h); }", r.stdout)
        # Only the comments' own lines differ from the diff with the TODO comments there.
        for k, text in (("1", self.lab("diff", self.num, "--step", "1").stdout),
                        ("2", r.stdout)):
            changed = [l for l in difflib_lines(before[k], text)
                       if not any(w in l for w in ("TODO", "my own words", "@@"))]
            self.assertEqual(changed, [], k)

    def test_a_step_takes_what_only_its_functions_use(self):
        text = """constexpr int kRun = 32;
constexpr int kShared = 4;
__device__ int helper(int x) { return x * kRun; }
void allocate() { helper(kShared); }
void release() {}
void copy() { int y = kShared; }
"""
        items = source.top_level_items(text)
        chosen = source.step_definitions(items, ["allocate", "release"], {"copy"})
        self.assertEqual([i.name for i in chosen], ["kRun", "helper", "allocate", "release"])
        self.assertEqual([i.name for i in source.step_definitions(items, ["copy"], {"allocate", "release"})],
                         ["copy"])

    def test_a_step_whose_functions_are_gone_shows_the_solutions(self):
        self.copy.first.exercise.write_text("// all deleted\n")
        r = self.lab("diff", self.num, "--step", "1")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("none of its functions", r.stdout)
        self.assertIn("+void release(void* p) { CUDA_CHECK(cudaFreeHost(p)); }", r.stdout)

    def test_without_a_step_table_the_todo_marks_are_the_steps(self):
        self.copy.first.readme.write_text("# a chapter being written\n")
        r = self.lab("diff", self.num, "--step", "2")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("step 2: copy", r.stdout)
        r = self.lab("diff", self.num, "--step", "7")
        self.assertEqual(r.returncode, 2)
        self.assertIn("has no TODO(7)", r.stderr)

    def test_diff_warns_that_it_spoils(self):
        r = self.lab("diff", self.num)
        self.assertIn("spoils", r.stderr)
        self.assertIn("cudaMallocHost", r.stdout)     # off a terminal nobody can answer

    def test_diff_asks_on_a_terminal_unless_yes(self):
        class Terminal(io.StringIO):
            def isatty(self):
                return True
        for answer, yes, shown in (("n\n", False, False), ("y\n", False, True), ("", True, True)):
            with self.subTest(answer=answer, yes=yes):
                old = sys.stdin
                sys.stdin = Terminal(answer)
                try:
                    agreed, _, err = capture(diff.spoiler_agreed, self.copy.first, None, yes)
                finally:
                    sys.stdin = old
                self.assertEqual(agreed, shown)
                self.assertIn("spoils", err)
                self.assertEqual("[y/N]" in err, not yes)


class TestSteps(unittest.TestCase):
    README = """# Chapter

| step | goal | functions | what the tests check |
|---|---|---|---|
| 1 | pinned memory | `allocate`, `release` | it is pinned |
| 2 | one copy | `copy` | one copy |

More text.
"""

    def make_chapter(self, readme=README, exercise=TestDiffSteps.STARTER, tags=(1, 2),
                     hint_steps=(1, 2)):
        tmp = Path(tempfile.mkdtemp(prefix="cml-steps-"))
        self.addCleanup(shutil.rmtree, tmp, True)
        ch = chapters.Chapter(num="01", name="01_x", title="x", root=tmp)
        ch.folder.mkdir(parents=True)
        ch.readme.write_text(readme)
        ch.exercise.write_text(exercise)
        ch.hints.write_text("".join(f"## Step {k} — a hint\nbody\n" for k in hint_steps))
        ch.tests.parent.mkdir(parents=True)
        ch.tests.write_text("".join(f'TEST_CASE("step {k}: x", "[ch01][step{k}]")\n' for k in tags))
        return ch

    def test_readme_step_table_is_read(self):
        rows = readme.readme_steps(self.README)
        self.assertEqual(sorted(rows), [1, 2])
        self.assertEqual(rows[1].goal, "pinned memory")
        self.assertEqual(rows[1].functions, ["allocate", "release"])

    def test_agreeing_chapter_has_no_disagreement(self):
        self.assertEqual(steps.disagreements(self.make_chapter()), [])

    def test_a_sass_checks_step_must_be_the_one_the_readme_gives_its_kernel(self):
        ch = self.make_chapter()
        build = "ch_sass_checks = [{'kernel': 'copy_kernel', 'has': 'LDG.E.128', 'step': %s},\n" \
                "                  {'kernel': 'allocate_kernel', 'lacks': 'STL'%s}]\n"
        (ch.folder / "meson.build").write_text(build % (2, ", 'step': 1"))
        self.assertEqual(steps.sass_check_disagreements(ch), [])
        (ch.folder / "meson.build").write_text(build % (1, ""))
        self.assertEqual(steps.sass_check_disagreements(ch), [
            "meson.build's SASS check of copy_kernel says step 1; README's step table gives copy_kernel to step 2",
            "meson.build's SASS check of allocate_kernel names no step ('step': 1)"])

    def test_each_disagreement_is_named(self):
        cases = [
            (dict(tags=(1, 2, 3)), "[stepK] tags name steps 1, 2, 3"),
            (dict(hint_steps=(1,)), "headings name steps 1"),
            (dict(readme=self.README.replace("`allocate`, `release`", "`allocate`")),
             "README's step 1 lists functions allocate; exercise.cu's TODO(1) marks allocate, release"),
            (dict(exercise=TestDiffSteps.STARTER.replace("TODO(2):", "TODO(3):")),
             "TODO(K): marks name steps 1, 3"),
            (dict(readme="# no table\n"), "no step table"),
        ]
        for kw, expected in cases:
            with self.subTest(expected=expected):
                problems = steps.disagreements(self.make_chapter(**kw))
                self.assertTrue(any(expected in p for p in problems), problems)

    def test_readme_bars_must_match_the_tests_constants(self):
        readme = "| 1 | x | `f` | at least `kFastBar` = 1.2 and `kGone` = 2 |\n"
        tests = "constexpr double kFastBar = 1.25;\n"
        problems = steps.bar_disagreements(readme, tests, "test_01.cpp")
        self.assertEqual(problems, ["README says kFastBar = 1.2 (`kFastBar` = 1.2); test_01.cpp sets it to 1.25",
                                    "README names the bar kGone, which test_01.cpp does not define"])
        self.assertEqual(steps.bar_disagreements(readme.replace("1.2 ", "1.25 ").replace(" and `kGone` = 2", ""),
                                                 tests, "test_01.cpp"), [])

    def test_a_lessons_bars_must_match_the_tests_constants(self):
        tests = "constexpr double kFastBar = 1.25;\nconstexpr double kSlowBar = 0.6;\n"
        docs = ("The bar **`kSlowBar` = 0.6** sits mid-gap.\n\n"
                "| bar | solution | mistake | value |\n|---|---|---|---|\n"
                "| `kFastBar` | 1.4-1.5 | 1.0 | middle of 1.0 and 1.5: 1.2 |\n"
                "| `kSlowBar` (step 2) | 0.9 | 0.3 | 0.6 (√0.27 = 0.52) |\n")
        problems = steps.bar_disagreements(docs, tests, "test_01.cpp", "docs/01_x.md")
        self.assertEqual(problems, ["docs/01_x.md says kFastBar = 1.2 (the table row of `kFastBar`); "
                                    "test_01.cpp sets it to 1.25"])
        self.assertEqual(steps.bar_disagreements(docs.replace(": 1.2 |", ": 1.25 |"), tests, "test_01.cpp",
                                                 "docs/01_x.md"), [])
        # The whole chapter: a lesson quoting a stale bar is a disagreement of its steps.
        ch = self.make_chapter()
        ch.docs.parent.mkdir(parents=True, exist_ok=True)
        ch.docs.write_text("| constant | value |\n|---|---|\n| `kNowhere` | 3 |\n")
        self.assertTrue(any("docs/" in p and "kNowhere" in p for p in steps.disagreements(ch)))

    def test_the_real_chapters_agree(self):
        for ch in chapters.load_chapters(REPO):
            if ch.folder.is_dir():
                with self.subTest(chapter=ch.name):
                    self.assertEqual(steps.disagreements(ch), [])

    def test_hint_shows_the_steps_goal_from_the_readme(self):
        copy = LabCopy()
        self.addCleanup(copy.cleanup)
        copy.first.readme.write_text(self.README)
        r = copy.run("hint", copy.first.num)
        self.assertIn("(step 1: pinned memory)", r.stdout)


class TestLinkAndMacroErrors(unittest.TestCase):
    def setUp(self):
        self.root = Path(tempfile.mkdtemp(prefix="cml-diag-"))
        self.addCleanup(shutil.rmtree, self.root, True)
        self.ch = chapters.Chapter(num="01", name="01_transfers", title="t", root=self.root)
        self.ch.folder.mkdir(parents=True)
        (self.ch.folder / "transfers.cuh").write_text(
            "namespace ch01 {\nvoid* allocate_pinned(std::size_t bytes);\nvoid free_pinned(void* p);\n}\n")
        (self.ch.folder / "owners.hpp").write_text("struct P { ~P() { free_pinned(p_); } };\n")
        self.ch.exercise.write_text("namespace ch01 {\nvoid* allocate_pinned(std::size_t b) { return 0; }\n}\n")

    LINK = ("/usr/bin/ld: chapters/ch01.p/01_transfers_main.cu.o: in function `main':\n"
            "tmpxft_00000c2a_00000000-6_main.cudafe1.cpp:(.text+0x749): undefined reference to "
            "`{sym}'\ncollect2: error: ld returned 1 exit status\n")

    def test_missing_function_is_named_with_its_header(self):
        out = self.LINK.format(sym="ch01::free_pinned(void*)")
        self.assertEqual(diagnostics.explain_missing_functions(out, self.ch),
                         ["your exercise.cu does not define `ch01::free_pinned(void*)` (declared in transfers.cuh)"])

    def test_mangled_symbols_are_demangled_when_cxxfilt_is_there(self):
        out = self.LINK.format(sym="_ZN4ch0111free_pinnedEPv").replace("main.cudafe1.cpp", "test_01_transfers.cpp")
        lines = diagnostics.explain_missing_functions(out, self.ch)
        expected = "ch01::free_pinned(void*)" if shutil.which("c++filt") else "_ZN4ch0111free_pinnedEPv"
        if shutil.which("c++filt"):
            self.assertEqual(len(lines), 1)
            self.assertIn(f"`{expected}`", lines[0])
        else:
            self.assertEqual([sym for sym, _ in diagnostics.undefined_references(out)], [expected])

    def test_changed_signature_points_at_the_learners_definition(self):
        self.ch.exercise.write_text("namespace ch01 {\n\nvoid free_pinned(int* p) {}\n}\n")
        lines = diagnostics.explain_missing_functions(self.LINK.format(sym="ch01::free_pinned(void*)"), self.ch)
        self.assertEqual(len(lines), 1)
        self.assertIn("the free_pinned at exercise.cu:3 has another signature; make it match transfers.cuh", lines[0])

    def test_link_errors_write_the_types_as_the_learner_wrote_them(self):
        self.ch.exercise.write_text("namespace ch01 {\n\nvoid free_pinned(int* p, cudaStream_t s) {}\n}\n")
        out = self.LINK.format(sym="ch01::free_pinned(void const*, CUstream_st*, CUevent_st**)")
        err = build.BuildFailed("test_ch01_learner", out, self.root / "build.log")
        _, shown, _ = capture(diagnostics.report_build_failure, err, self.ch)
        self.assertIn("`ch01::free_pinned(const void*, cudaStream_t, cudaEvent_t*)`", shown)
        self.assertNotIn("CUstream_st", shown)
        self.assertEqual(diagnostics.as_the_learner_wrote(
            "f(cudaError, CUtensorMap_st const&, std::__cxx11::basic_string<char, std::char_traits<char>, "
            "std::allocator<char> > const&, cudaErrorInvalidValue)"),
            "f(cudaError_t, const CUtensorMap&, const std::string&, cudaErrorInvalidValue)")

    def test_other_link_errors_are_left_to_the_linker_lines(self):
        out = self.LINK.format(sym="cml::something_else()")
        self.assertEqual(diagnostics.explain_missing_functions(out, self.ch), [])

    def test_nvcc_error_inside_a_macro_shows_the_learners_line(self):
        self.ch.exercise.write_text('namespace ch01 {\nvoid pin(void* p, std::size_t n) {\n'
                                    '  CUDA_CHECK(cudaHostRegister(p, n, "x"));\n}\n}\n')
        out = ('../chapters/01_transfers/exercise.cu(3): error: argument of type "const char *" is '
               'incompatible with parameter of type "unsigned int"\n'
               '    ::cml::check_cuda((cudaHostRegister(p, n, "x")), "cudaHostRegister(p, n, \\"x\\")", '
               '"../chapters/01_transfers/exercise.cu", 3);\n'
               '                                              ^\n\n1 error detected\n')
        lines = diagnostics.extract_compile_errors(out, self.ch.exercise_rel, root=self.root)
        self.assertEqual(lines[0], 'chapters/01_transfers/exercise.cu:3: error: argument of type '
                                   '"const char *" is incompatible with parameter of type "unsigned int"')
        self.assertEqual(lines[1], '    CUDA_CHECK(cudaHostRegister(p, n, "x"));')
        self.assertEqual(lines[2].index("^"), lines[1].index('"x"'))
        self.assertFalse(any("check_cuda" in l for l in lines))

    SORT_SOURCE = "#include <algorithm>\n#include <map>\nvoid f() {\n  std::map<int, int> order;\n" \
                  "  std::sort(order.begin(), order.end());\n}\n"

    def test_an_error_inside_a_system_header_is_shown_at_the_learners_call(self):
        rel = "chapters/09_sgemm/exercise.cu"
        (self.root / "chapters" / "09_sgemm").mkdir(parents=True)
        (self.root / rel).write_text(self.SORT_SOURCE)
        lines = diagnostics.extract_compile_errors(NVCC_SORT_OUTPUT, rel, root=self.root)
        self.assertEqual(lines, [
            f'{rel}:5: error: no operator "-" matches these operands',
            "    (inside std::sort, which this line calls: /usr/include/c++/12/bits/stl_algo.h:1938; "
            "1 more error there)",
            "    operand types are: std::_Rb_tree_iterator<std::pair<const int, int>> - "
            "std::_Rb_tree_iterator<std::pair<const int, int>>",
            "    std::sort(order.begin(), order.end());",
            "         ^"])
        lines = diagnostics.extract_compile_errors(GCC_SORT_OUTPUT, rel, root=self.root)
        self.assertEqual(lines[0], f"{rel}:5: error: no match for \u2018operator-\u2019 (operand types are "
                                   "\u2018std::_Rb_tree_iterator<std::pair<const int, int> >\u2019 and "
                                   "\u2018std::_Rb_tree_iterator<std::pair<const int, int> >\u2019)")
        self.assertEqual(lines[1:], ["    (inside std::sort, which this line calls: /usr/include/c++/12/bits/stl_algo.h:1938)",
                                     "    std::sort(order.begin(), order.end());", "         ^"])

    def test_function_names_of_signatures(self):
        for signature, name in (('void std::sort(_RAIter, _RAIter) [with _RAIter=int*]', "std::sort"),
                                ("\u2018void std::vector<_Tp, _Alloc>::push_back(const value_type&) [with _Tp = int]\u2019",
                                 "std::vector<_Tp, _Alloc>::push_back"),
                                ("bool std::operator<(const pair<A, B>&, const pair<A, B>&)", "std::operator<"),
                                ("ch09::run<T>(T)", "ch09::run<T>")):
            with self.subTest(signature=signature):
                self.assertEqual(diagnostics.function_of_signature(signature), name)

    def test_gcc_error_in_a_macros_definition_moves_to_the_learners_line(self):
        self.ch.exercise.write_text("void f(void* p) {\n\n  CUDA_CHECK(p);\n}\n")
        out = ("../common/cml/errors.hpp:71:45: error: cannot convert 'void*' to 'cudaError_t'\n"
               "   71 | #define CUDA_CHECK(expr) ::cml::check_cuda((expr), #expr, __FILE__, __LINE__)\n"
               "../chapters/01_transfers/exercise.cu:3:3: note: in expansion of macro 'CUDA_CHECK'\n"
               "    3 |   CUDA_CHECK(p);\n")
        lines = diagnostics.extract_compile_errors(out, self.ch.exercise_rel, root=self.root)
        self.assertEqual(lines, ["chapters/01_transfers/exercise.cu:3: error: cannot convert 'void*' to 'cudaError_t'",
                                 "    CUDA_CHECK(p);"])


class TestBuildAndSelfTest(unittest.TestCase):
    def test_first_build_means_nothing_built_yet(self):
        with tempfile.TemporaryDirectory() as d:
            build_dir = Path(d)
            self.assertTrue(build.is_first_build(build_dir))
            (build_dir / ".ninja_log").write_text("# ninja log v6\n")
            self.assertTrue(build.is_first_build(build_dir))
            (build_dir / ".ninja_log").write_text("# ninja log v6\n0\t10\t0\tcommon/a.o\tabc\n")
            self.assertFalse(build.is_first_build(build_dir))

    def test_self_test_names_the_reason_of_each_skip(self):
        with tempfile.TemporaryDirectory() as d:
            log = Path(d) / "testlog.json"
            entries = [
                {"name": "solutions+ch01 - cuda-memory-lab:ch01 solution", "result": "SKIP",
                 "stdout": "SKIP: no CUDA device: no NVIDIA driver\n"},
                {"name": "solutions+ch02 - cuda-memory-lab:ch02 solution", "result": "SKIP",
                 "stdout": "SKIP: no CUDA device: no NVIDIA driver\n"},
                {"name": "cpu - cuda-memory-lab:ch04 solution SASS", "result": "SKIP",
                 "stdout": "", "stderr": "SKIP: cuobjdump not found\n"},
                {"name": "cpu - cuda-memory-lab:cpu", "result": "OK", "stdout": "SKIP: not this one\n"},
            ]
            log.write_text("".join(json.dumps(e) + "\n" for e in entries))
            self.assertEqual(selftest.skip_reasons(log), {
                "no CUDA device: no NVIDIA driver": ["ch01 solution", "ch02 solution"],
                "cuobjdump not found": ["ch04 solution SASS"]})


class TestCheckReport(LabTestCase):
    def test_failure_points_to_the_failing_steps_hint(self):
        res = check.interpret_check(1, JUNIT_V3, "")
        _, out, _ = capture(check.print_check, self.copy.first, res, Path("/work/main"))
        self.assertIn(f"hint: ./lab hint {self.num} --step 2", out)

    def test_verbose_output_does_not_repeat_the_skip_line(self):
        output = "SKIP: no CUDA device: no NVIDIA driver\nsomething else\n"
        res = check.interpret_check(77, None, output)
        self.assertTrue(res.nothing_ran)
        shown = check.program_output_without(output, res.state["reason"])
        self.assertEqual(shown, "something else")


class TestCheckWithoutGpu(LabTestCase):
    """No GPU: the learner's file compiled, the SASS checks of their kernels run, exit 77."""

    def setUp(self):
        super().setUp()
        self.copy.first.exercise.write_text(TestDiffSteps.STARTER.replace(
            "void copy(int* d", "__global__ void copy_kernel(int* d, const int* h) {}\nvoid copy(int* d"))
        self.copy.first.readme.write_text(TestSteps.README)
        self.build_dir = self.copy.root / "build"
        (self.build_dir / "meson-info").mkdir(parents=True)
        self.fake_sass = self.copy.tmp / "fake_sass_check"
        self.tc = toolchain.Toolchain(root=self.copy.root, env=dict(os.environ))
        self.saved = no_gpu.build_targets
        no_gpu.build_targets = lambda *a, **kw: None    # nothing to build in this copy
        self.addCleanup(setattr, no_gpu, "build_targets", self.saved)
        os.environ["CML_LAB_STATE_DIR"] = str(self.copy.state)
        self.addCleanup(os.environ.pop, "CML_LAB_STATE_DIR", None)

    def register_sass_check(self, rc: int, output: str):
        self.fake_sass.write_text(f"#!/bin/sh\necho '{output}'\nexit {rc}\n")
        self.fake_sass.chmod(0o755)
        tests = [{"name": "ch01 learner SASS copy_kernel has LDG.E.128",
                  "cmd": [str(self.fake_sass), "build/chapters/ch01", "copy_kernel", "LDG.E.128"],
                  "suite": ["cuda-memory-lab:learner_sass", f"cuda-memory-lab:ch{self.num}"]},
                 {"name": "another chapter's", "cmd": ["false", "x", "k", "OP"],
                  "suite": ["cuda-memory-lab:learner_sass", "cuda-memory-lab:ch99"]}]
        (self.build_dir / "meson-info" / "intro-tests.json").write_text(json.dumps(tests))

    def check(self):
        def without_gpu():
            found = no_gpu.check_without_gpu(self.copy.first, self.tc, "no CUDA device: no NVIDIA driver")
            return check.conclude(self.copy.first, check.without_gpu_result(found), self.copy.root)
        return capture(without_gpu)

    def test_passing_sass_check_then_the_steps_that_need_a_gpu(self):
        self.register_sass_check(0, "PASSED")
        rc, out, _ = self.check()
        self.assertEqual(rc, 77)
        self.assertIn("step 2: copy_kernel's SASS has LDG.E.128", out)
        self.assertEqual(out.strip().splitlines()[-1],
                         "your exercise.cu compiles; steps 1 and 2 need a GPU: no CUDA device: no NVIDIA driver")
        self.assertEqual(self.copy.state_json()["chapters"][self.copy.first.name]["state"], "skipped")

    def test_failing_sass_check_is_a_failed_step_with_its_hint(self):
        self.register_sass_check(1, "copy_kernel: 0 LDG.E.128 instruction(s)")
        rc, out, _ = self.check()
        self.assertEqual(rc, 1)
        self.assertIn("0 LDG.E.128 instruction(s)", out)
        self.assertIn(f"hint: ./lab hint {self.num} --step 2", out)

    def test_a_kernels_step_comes_from_the_readme_not_the_todo_comments(self):
        self.register_sass_check(1, "copy_kernel: 0 LDG.E.128 instruction(s)")
        for edit in ("// TODO(2): copy it; TODO(1) is done above (a mention)\n", "// TODO(1): allocate pinned memory\n"):
            text = self.copy.first.exercise.read_text()
            self.copy.first.exercise.write_text(text.replace(edit, ""))
            rc, out, _ = self.check()
            self.assertEqual(rc, 1)
            self.assertIn("first failure found here: copy_kernel's SASS has LDG.E.128 (step 2)", out)
            self.assertNotIn("SASS: copy_kernel", out)

    def test_kernel_steps_by_name_by_launcher_then_by_the_solutions_launches(self):
        ch = self.copy.first
        ch.readme.write_text(TestSteps.README.replace("`copy`", "`copy`, `odd_name_kernel`"))
        ch.solution.write_text("__global__ void fill_rows(int* d) {}\n"
                               "void allocate(std::size_t n) { fill_rows<<<1, 1>>>(nullptr); }\n")
        step_of = steps.kernel_steps(ch)
        self.assertEqual([step_of(k) for k in ("odd_name_kernel", "copy_kernel", "release_kernel<", "fill_rows",
                                                "unknown_kernel")], [2, 2, 1, 1, None])
        ch.readme.write_text("# no table yet\n")       # then, and only then, the TODO marks
        self.assertEqual(steps.kernel_steps(ch)("copy_kernel"), 2)

    def test_without_cuobjdump_the_sass_check_skips_with_its_reason(self):
        self.register_sass_check(77, "SKIP: cuobjdump not found")
        rc, out, _ = self.check()
        self.assertEqual(rc, 77)
        self.assertIn("cuobjdump not found", out)


class TestVirtualEnvironment(unittest.TestCase):
    """Ctrl-C while the first ./lab run creates .venv must not leave one without pip, and a
    .venv left so by an older lab (or a failed ensurepip) is made again, not a dead end."""

    def setUp(self):
        self.root = Path(tempfile.mkdtemp(prefix="cml-venv-"))
        self.addCleanup(shutil.rmtree, self.root, True)
        self.venv = self.root / ".venv"

    def test_a_venv_without_pip_or_python_is_broken(self):
        self.assertEqual(toolchain.venv_problem(self.venv), "")           # none yet: nothing wrong
        (self.venv / "bin").mkdir(parents=True)
        self.assertIn("no python", toolchain.venv_problem(self.venv))      # interrupted early
        shutil.rmtree(self.venv)
        r = subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(self.venv)], capture_output=True)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("No module named pip", toolchain.venv_problem(self.venv))

    def fake_venv(self, venv: Path) -> None:
        """A venv whose python accepts anything (pip install included), made in no time."""
        (venv / "bin").mkdir(parents=True)
        (venv / "pyvenv.cfg").write_text("home = /usr/bin\n")
        (venv / "bin" / "python").write_text("#!/bin/sh\nexit 0\n")
        (venv / "bin" / "python").chmod(0o755)

    def test_a_broken_venv_is_made_again_before_installing(self):
        (self.venv / "bin").mkdir(parents=True)
        (self.venv / "bin" / "python3").write_text("")            # half-made: no bin/python
        saved = toolchain.create_venv
        made = []
        toolchain.create_venv = lambda venv: (made.append(venv), self.fake_venv(venv))
        try:
            _, out, _ = capture(toolchain.pip_install, self.root, ["meson"], "test")
        finally:
            toolchain.create_venv = saved
        self.assertEqual(made, [self.venv])
        self.assertIn(".venv is broken (it has no python: its creation was interrupted): making it again", out)
        self.assertFalse((self.venv / "bin" / "python3").exists())

    def test_an_interrupted_or_failed_creation_leaves_no_venv(self):
        saved = toolchain.run_quiet

        def interrupted(cmd, *a, **kw):
            (self.venv / "bin").mkdir(parents=True)
            raise KeyboardInterrupt

        def failed(cmd, *a, **kw):
            (self.venv / "bin").mkdir(parents=True)
            return 1, "ensurepip is not available"
        try:
            toolchain.run_quiet = interrupted
            with self.assertRaises(KeyboardInterrupt):
                toolchain.create_venv(self.venv)
            self.assertFalse(self.venv.exists())
            toolchain.run_quiet = failed
            with self.assertRaises(core.LabError) as e:
                toolchain.create_venv(self.venv)
            self.assertIn("install python3-venv", str(e.exception))
            self.assertFalse(self.venv.exists())
        finally:
            toolchain.run_quiet = saved

    def test_a_linked_venv_is_not_removed_but_the_fix_is_named(self):
        target = self.root / "elsewhere"
        target.mkdir()
        self.venv.symlink_to(target)
        with self.assertRaises(core.LabError) as e:
            capture(toolchain.pip_install, self.root, ["meson"], "test")
        self.assertIn("rm -rf .venv", str(e.exception))
        self.assertTrue(target.is_dir())


class TestOutputThatCannotBeWritten(LabTestCase):
    """A user's input or terminal never ends in a traceback: one line and the course's code."""

    def popen_lab(self, *args, env=None, **kw):
        return subprocess.run([sys.executable, str(self.copy.root / "lab"), *args], cwd=self.copy.root,
                              env=env or self.copy.env(), stderr=subprocess.PIPE, text=True, timeout=60, **kw)

    def assert_one_line(self, r, code, words):
        self.assertEqual(r.returncode, code, r.stderr)
        self.assertNotIn("Traceback", r.stderr)
        self.assertEqual(len(r.stderr.strip().splitlines()), 1, r.stderr)
        self.assertIn(words, r.stderr)

    def test_a_closed_stdout_is_one_line_and_exit_2(self):
        for args in ((), ("list",), ("hint", self.num), ("help",)):
            with self.subTest(args=args):
                r = self.popen_lab(*args, preexec_fn=lambda: os.close(1))
                self.assert_one_line(r, 2, "standard output is closed")

    def test_a_closed_pipe_ends_quietly(self):
        for args in (("list",), ("hint", self.num, "--all"), ("diff", self.num, "--yes")):
            with self.subTest(args=args):
                read_end, write_end = os.pipe()
                os.close(read_end)                       # `| head -1` that has already gone
                try:
                    r = self.popen_lab(*args, stdout=write_end)
                finally:
                    os.close(write_end)
                self.assertEqual(r.returncode, 0, r.stderr)
                self.assertNotIn("Traceback", r.stderr)
                self.assertNotIn("Exception ignored", r.stderr)

    def test_an_encoding_that_cannot_print_a_character_prints_a_replacement(self):
        r = self.popen_lab("hint", self.num, env=dict(self.copy.env(), PYTHONIOENCODING="ascii"),
                           stdout=subprocess.PIPE)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("hint 1 of 3: Step 1 ? pinned memory: where to start", r.stdout)
        r = self.popen_lab("hint", "\u00b2", env=dict(self.copy.env(), PYTHONIOENCODING="ascii"))
        self.assert_one_line(r, 2, "no chapter '?'")

    def test_a_chapter_of_non_ascii_digits_is_no_chapter(self):
        for spec in ("\u00b2", "ch\u00b2", "\u0661"):
            with self.subTest(spec=spec):
                self.assert_one_line(self.popen_lab("hint", spec), 2, f"no chapter '{spec}'")

    def test_bench_out_that_is_a_file_or_cannot_be_made_is_a_usage_error(self):
        r = self.popen_lab("bench", self.num, "--out", "chapters.txt")
        self.assert_one_line(r, 2, "--out chapters.txt is a file, not a folder")
        self.assertFalse((self.copy.root / "build").exists(), "refused before building")
        saved = bench.setup, bench.build_target
        bench.setup = lambda *a, **kw: toolchain.Toolchain(root=self.copy.root, env=dict(os.environ))
        bench.build_target = lambda *a, **kw: Path("/bin/true")
        try:
            args = type("Args", (), {"chapter": self.num, "solution": False, "plot_only": False,
                                     "out": str(self.copy.root / "chapters.txt" / "sub"), "program_args": []})()
            with self.assertRaises(core.LabError) as e:
                capture(bench.cmd_bench, args, self.copy.root)
        finally:
            bench.setup, bench.build_target = saved
        self.assertEqual(e.exception.code, 2)
        self.assertIn("cannot create the folder", str(e.exception))


class TestWatch(unittest.TestCase):
    def test_every_save_triggers_one_check_and_ctrl_c_ends_the_loop(self):
        with tempfile.TemporaryDirectory() as d:
            path = Path(d) / "exercise.cu"
            path.write_text("v1")
            calls, sleeps = [], []

            def fake_sleep(_):
                sleeps.append(1)
                if len(sleeps) == 2:            # the learner saves
                    os.utime(path, ns=(10**18, 10**18))
                if len(sleeps) == 5:
                    raise KeyboardInterrupt
            with self.assertRaises(KeyboardInterrupt):
                watch.watch_loop(path, lambda: calls.append(1), 0, fake_sleep)
            self.assertEqual(len(calls), 2)

    def test_watch_exits_0_on_ctrl_c(self):
        copy = LabCopy()
        self.addCleanup(copy.cleanup)
        saved = watch.setup, watch.watch_loop, watch.ensure_sass_tools
        watch.setup = lambda *a, **kw: None
        watch.ensure_sass_tools = lambda *a, **kw: None

        def interrupted(*a, **kw):
            raise KeyboardInterrupt
        watch.watch_loop = interrupted
        try:
            args = type("Args", (), {"chapter": copy.first.num})()
            rc, out, _ = capture(watch.cmd_watch, args, copy.root)
        finally:
            watch.setup, watch.watch_loop, watch.ensure_sass_tools = saved
        self.assertEqual(rc, 0)
        self.assertIn("stopped watching", out)


if __name__ == "__main__":
    unittest.main()
