#!/usr/bin/env python3
"""The test main's supervisor mode, proven without a GPU: watchdog_cases' test cases pass,
fail, hang, abort, crash, skip and exit early; run isolated (CML_ISOLATE=on), each must be
reported as itself, the hung one by the watchdog's message naming its step, the hung step's
later case as not run (never started), within a time bound, with the JUnit reports merged
into one file ./lab check can read, and no process left behind.
Run: python3 tests/cpu/test_watchdog.py build/tests/watchdog_cases
"""
import importlib.machinery
import importlib.util
import os
import signal
import subprocess
import sys
import tempfile
import time
import unittest
import xml.etree.ElementTree as ET
from pathlib import Path

EXE = None  # set from the command line
REPO = Path(__file__).resolve().parents[2]
TIMEOUT = 2  # the watchdog's limit in these tests, seconds


def run(args, timeout=60, **env):
    full = {k: v for k, v in os.environ.items() if not k.startswith("CML_")}
    full.update({"CML_ISOLATE": "on", "CML_CASE_TIMEOUT": str(TIMEOUT)}, **env)
    start = time.monotonic()
    r = subprocess.run([EXE] + args, capture_output=True, text=True, env=full, timeout=timeout)
    return r.returncode, r.stdout + r.stderr, time.monotonic() - start


def alive(pid):
    """A process that still runs (a zombie waiting for its parent does not count)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state != "Z"


def wait_gone(pid, seconds=5.0):
    end = time.monotonic() + seconds
    while alive(pid) and time.monotonic() < end:
        time.sleep(0.05)
    return not alive(pid)


def failure_text(case):
    el = case.find("failure")
    if el is None:
        el = case.find("error")
    return " ".join(((el.text or "") + " " + el.get("message", "")).split()) if el is not None else None


def load_interpret_check():
    """./lab check's reader of a test program's result (labkit/, or the single-file lab
    of old); None when neither is there."""
    sys.path.insert(0, str(REPO))
    try:
        from labkit.check import interpret_check  # noqa: PLC0415
        return interpret_check
    except ImportError:
        pass
    try:
        loader = importlib.machinery.SourceFileLoader("cml_lab_for_watchdog", str(REPO / "lab"))
        spec = importlib.util.spec_from_loader("cml_lab_for_watchdog", loader)
        module = importlib.util.module_from_spec(spec)
        sys.modules["cml_lab_for_watchdog"] = module
        loader.exec_module(module)
    except Exception:  # noqa: BLE001 - any failure means: not importable this way
        return None
    return getattr(module, "interpret_check", None)


class Supervisor(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.TemporaryDirectory()
        cls.xml = Path(cls.tmp.name) / "report.xml"
        cls.pidfile = Path(cls.tmp.name) / "pids"
        cls.started = Path(cls.tmp.name) / "second-hang-started"
        cls.rc, cls.out, cls.seconds = run(["-r", "junit", "-o", str(cls.xml)],
                                           CML_WATCHDOG_PIDFILE=str(cls.pidfile),
                                           CML_WATCHDOG_STARTED=str(cls.started))
        cls.text = cls.xml.read_text(encoding="utf-8") if cls.xml.exists() else ""

    @classmethod
    def tearDownClass(cls):
        cls.tmp.cleanup()

    def cases(self):
        root = ET.fromstring(self.text)  # well formed, or this raises
        self.assertEqual(root.tag, "testsuites")
        suites = root.findall("testsuite")
        self.assertEqual(len(suites), 1)
        return suites[0], {c.get("name"): c for c in suites[0].iter("testcase")}

    def case(self, prefix):
        _, cases = self.cases()
        found = [c for n, c in cases.items() if n.startswith(prefix) and not n.startswith(prefix + " a second")]
        self.assertEqual(len(found), 1, f"one test case named {prefix}...: {sorted(cases)}")
        return found[0]

    def test_exit_code_and_time_bound(self):
        self.assertEqual(self.rc, 1, self.out)
        # One case waits out the watchdog (step 3's second is not run); the rest take well
        # under a second each.
        self.assertLess(self.seconds, TIMEOUT + 25, self.out)

    def test_every_case_reports_once(self):
        suite, cases = self.cases()
        self.assertEqual(len(cases), 14, sorted(cases))
        self.assertEqual(len(list(suite.iter("testcase"))), 14)
        self.assertEqual(int(suite.get("tests")), 14)
        failed = [c for c in cases.values() if failure_text(c) is not None]
        self.assertEqual(int(suite.get("failures")) + int(suite.get("errors")), len(failed))
        # step 7's skip (a <skipped> under Catch2 v3 only) and step 3's case not run
        skipped = [c for c in cases.values() if c.find("skipped") is not None]
        self.assertEqual(int(suite.get("skipped")), len(skipped))
        self.assertIn(len(skipped), (1, 2))

    def test_passing_cases_pass(self):
        # step 8's name needs escaping in a test spec; step 10 runs its executable again
        for prefix in ("step 1:", "step 8:", "step 10:", "step 13:"):
            self.assertIsNone(failure_text(self.case(prefix)), prefix)

    def test_own_failure_message(self):
        self.assertIn("the learner's own failure message", failure_text(self.case("step 2:")))

    def test_hang_names_step(self):
        text = failure_text(self.case("step 3:"))
        self.assertIn(f"the kernel of step 3 never finished within {TIMEOUT} s: look for a loop that never "
                      "ends or a wait that never completes (step 3: a case that never ends)", text)
        self.assertIn("the kernel of step 3 never finished", self.out)

    def test_hung_step_runs_no_more_cases(self):
        # step 3's second case: reported at once as not run, a skip naming the case that
        # hung, never a pass nor a failure of its own; the hang's message stays first
        _, cases = self.cases()
        case = cases["step 3: a second case that never ends"]
        self.assertIsNone(failure_text(case))
        skipped = case.find("skipped")
        self.assertIsNotNone(skipped)
        expected = "not run: step 3's kernel already hung in 'step 3: a case that never ends' (fix that first)"
        self.assertEqual(skipped.get("message"), expected)
        self.assertEqual(" ".join((skipped.text or "").split()), expected)
        self.assertFalse(self.started.exists(), "step 3's second case was started after step 3 hung")
        self.assertIn("isolation: not run: step 3: a second case that never ends\nisolation: " + expected, self.out)
        names = list(cases)
        self.assertLess(names.index("step 3: a case that never ends"),
                        names.index("step 3: a second case that never ends"))
        self.assertIn("14 test case(s), each in its own process (at most 2 s each): 4 passed, 8 failed (1 timed out, "
                      "4 crashed), ", self.out)
        self.assertIn("skipped (1 not run: their step's kernel had hung)", self.out)

    def test_hang_leaves_nothing_running(self):
        child, helper = map(int, self.pidfile.read_text().split())
        self.assertTrue(wait_gone(child), "the hung test process still runs")
        self.assertTrue(wait_gone(helper), "the hung test's helper process still runs")

    def test_signals_are_named(self):
        self.assertIn("signal 6 (SIGABRT", failure_text(self.case("step 4:")))
        self.assertIn("signal 11 (SIGSEGV", failure_text(self.case("step 5:")))
        self.assertIn("step 5", failure_text(self.case("step 5:")))

    def test_crash_note_names_step_and_cause(self):
        text = failure_text(self.case("step 11:"))
        self.assertTrue(text.startswith("step 11 crashed: free_things crashed the process: release them with the "
                                        "call that matches (step 11)"), text)
        self.assertIn("signal 11 (SIGSEGV)", text)

    def test_escaped_exception_names_its_message(self):
        text = failure_text(self.case("step 12:"))
        self.assertTrue(text.startswith("step 12 crashed: an exception escaped where none may"), text)
        self.assertIn("the learner's release failed in a destructor", text)
        self.assertIn("signal 6 (SIGABRT)", text)

    def test_sticky_cuda_error(self):
        text = failure_text(self.case("step 6:"))
        self.assertIn("step 6 hit a sticky CUDA error, cudaErrorIllegalAddress", text)
        self.assertIn("exercise.cu:42", text)  # and its own message still follows

    def test_skip_is_a_skip(self):
        case = self.case("step 7:")
        self.assertIsNone(failure_text(case))
        captured = " ".join((el.text or "") for el in case if el.tag in ("system-err", "system-out", "skipped"))
        self.assertTrue(case.find("skipped") is not None or "SKIP: this machine lacks the feature" in captured)

    def test_early_exit(self):
        self.assertIn("ended with exit status 5", failure_text(self.case("step 9:")))

    def test_lab_reads_the_merged_report(self):
        interpret_check = load_interpret_check()
        if interpret_check is None:
            self.skipTest("./lab's interpret_check is not importable")
        res = interpret_check(self.rc, self.text, self.out)
        self.assertEqual(res.code, 1)
        self.assertEqual(res.first_failure.step, 2)
        states = {s.number: s.state for s in res.steps}
        self.assertEqual(states, {1: "passed", 2: "failed", 3: "failed", 4: "failed", 5: "failed",
                                  6: "failed", 7: "skipped", 8: "passed", 9: "failed", 10: "passed",
                                  11: "failed", 12: "failed", 13: "passed"})
        step3 = next(s for s in res.steps if s.number == 3)
        self.assertEqual([c.status for c in step3.cases], ["failed", "skipped"])
        self.assertEqual(step3.cases[1].message, "not run: step 3's kernel already hung in 'step 3: a case that "
                                                 "never ends' (fix that first)")


class Modes(unittest.TestCase):
    def test_console_reporter(self):
        rc, out, _ = run(["[step1],[step3]"])
        self.assertEqual(rc, 1, out)
        self.assertIn("isolation: passed", out)
        self.assertIn("isolation: TIMED OUT", out)
        self.assertIn("the kernel of step 3 never finished", out)
        self.assertIn("isolation: not run: step 3: a second case that never ends", out)
        self.assertIn("3 test case(s), each in its own process", out)

    def test_two_hangs_of_one_step_wait_once(self):
        # the second hang of step 3 is reported, not waited for; step 13's case still runs
        with tempfile.TemporaryDirectory() as tmp:
            started = Path(tmp) / "second-hang-started"
            rc, out, seconds = run(["[step3],[step13]"], CML_WATCHDOG_STARTED=str(started))
            self.assertFalse(started.exists(), out)
        self.assertEqual(rc, 1, out)
        self.assertLess(seconds, 2 * TIMEOUT, out)
        self.assertEqual(out.count("isolation: TIMED OUT"), 1, out)
        self.assertIn("isolation: not run: step 3's kernel already hung in 'step 3: a case that never ends' "
                      "(fix that first)", out)
        self.assertRegex(out, r"isolation: passed after [0-9.]+ s: step 13:")
        self.assertIn("3 test case(s), each in its own process (at most 2 s each): 1 passed, 1 failed (1 timed out, "
                      "0 crashed), 1 skipped (1 not run: their step's kernel had hung)", out)

    def test_cases_of_no_step_all_run(self):
        # no step, no kernel known to be shared: each hanging case waits out its own limit
        rc, out, seconds = run(["[.nostep]"])
        self.assertEqual(rc, 1, out)
        self.assertEqual(out.count("isolation: TIMED OUT"), 2, out)
        self.assertNotIn("not run", out)
        self.assertGreaterEqual(seconds, 2 * TIMEOUT, out)

    def test_all_pass(self):
        rc, out, _ = run(["[step1],[step8]"])
        self.assertEqual(rc, 0, out)

    def test_all_skipped_is_77(self):
        rc, out, _ = run(["[step7]"])
        self.assertEqual(rc, 77, out)
        self.assertIn("SKIP: all 1 test case(s) skipped", out)

    def test_junit_to_stdout_stays_parseable(self):
        full = {k: v for k, v in os.environ.items() if not k.startswith("CML_")}
        full.update(CML_ISOLATE="on")
        r = subprocess.run([EXE, "-r", "junit", "[step1],[step2]"], capture_output=True, text=True, env=full,
                           timeout=60)
        self.assertEqual(r.returncode, 1, r.stdout + r.stderr)
        self.assertEqual(len(list(ET.fromstring(r.stdout).iter("testcase"))), 2, r.stdout)

    def test_off_runs_in_one_process(self):
        rc, out, _ = run(["[step1],[step2]"], CML_ISOLATE="off")
        self.assertEqual(rc, 1, out)
        self.assertNotIn("isolation:", out)

    def test_bad_settings_are_usage_errors(self):
        self.assertEqual(run(["[step1]"], CML_CASE_TIMEOUT="soon")[0], 2)
        self.assertEqual(run(["[step1]"], CML_ISOLATE="maybe")[0], 2)

    def test_sigterm_takes_the_child_along(self):
        with tempfile.TemporaryDirectory() as tmp:
            pidfile = Path(tmp) / "pids"
            env = {k: v for k, v in os.environ.items() if not k.startswith("CML_")}
            env.update(CML_ISOLATE="on", CML_CASE_TIMEOUT="100", CML_WATCHDOG_PIDFILE=str(pidfile))
            p = subprocess.Popen([EXE, "[step3]"], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            end = time.monotonic() + 20
            while not (pidfile.exists() and len(pidfile.read_text().split()) == 2) and time.monotonic() < end:
                time.sleep(0.05)
            self.assertTrue(pidfile.exists(), "the hanging case never started")
            p.send_signal(signal.SIGTERM)
            p.wait(timeout=10)
            child, helper = map(int, pidfile.read_text().split())
            self.assertTrue(wait_gone(child), "the child outlived its supervisor")
            self.assertTrue(wait_gone(helper), "the child's helper outlived the supervisor")


if __name__ == "__main__":
    if len(sys.argv) < 2:
        sys.exit("usage: test_watchdog.py PATH/TO/watchdog_cases")
    EXE = str(Path(sys.argv.pop(1)).resolve())
    unittest.main()
