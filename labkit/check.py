"""./lab check: the chapter's tests against the learner's exercise.cu, each step's state,
the first failure and the hint of its step. Without a GPU it still compiles the learner's
file and runs what needs none (no_gpu.py). One path for a verdict: checking returns a
CheckResult, print_check prints it and check_chapter remembers it."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Optional

from .build import BuildFailed, build_target
from .chapters import Chapter, chapter_of, require_exercise
from .core import EXIT_FAIL, EXIT_OK, EXIT_SKIP, MAX_ERROR_LINES, ROOT
from .diagnostics import report_build_failure
from .hints import hint_command
from .junit import CaseResult, group_steps, parse_junit, skip_lines
from .no_gpu import NoGpuResult, check_without_gpu
from .processes import run_quiet
from .state import needs_gpu, remember, state_dir
from .readme import step_goals
from .sass_tools import ensure_sass_tools
from .terminal import describe_rc, paint, say, unique
from .toolchain import Toolchain, setup

CHECK_TIMEOUT_S = 1800         # a learner's kernel that never ends must not hang ./lab check


@dataclass
class CheckResult:
    """What a check concluded: exit code, the state to remember, and what to show."""
    code: int
    state: dict
    steps: list
    first_failure: Optional[CaseResult] = None
    notes: list = field(default_factory=list)
    build_error: Optional[BuildFailed] = None   # the learner's file did not build
    no_gpu: Optional[NoGpuResult] = None        # no GPU: what was checked without one
    output: str = ""                            # the test program's output

    @property
    def nothing_ran(self) -> bool:
        """The test program skipped before any test case: no GPU (or none usable)."""
        return self.code == EXIT_SKIP and not self.steps


_ALL_SKIPPED = re.compile(r"^all \d+ test case\(s\) skipped$")


def interpret_check(rc: int, xml_text: Optional[str], output: str) -> CheckResult:
    """Turns the test program's exit code, JUnit report (maybe absent: no GPU means it exits
    77 before Catch2 starts) and console output into the chapter's verdict. A skip is never
    counted as a pass."""
    cases = parse_junit(xml_text) if xml_text else []
    steps = group_steps(cases)
    numbered = [s for s in steps if s.number is not None]
    passed_steps = sum(1 for s in numbered if s.state == "passed")
    base = {"steps_passed": passed_steps, "steps_total": len(numbered)}
    failed = [c for c in cases if c.status == "failed"]
    skipped = [c for c in cases if c.status == "skipped"]
    known = {c.message for c in skipped}
    loose = [r for r in skip_lines(output) if r not in known]
    notes = []
    if rc not in (0, 1, 77):
        notes.append(f"the test program stopped abnormally: {describe_rc(rc)}")
    if failed:
        first = min(failed, key=lambda c: (c.step if c.step is not None else 1 << 30))
        return CheckResult(EXIT_FAIL, dict(base, state="failing", step=first.step), steps, first, notes)
    if rc not in (0, 77) or (rc == 0 and not cases):
        if rc == 0:
            notes.append("the test program ran no test case")
        elif rc == 1:
            notes.append("the test program failed, but its report names no failing test")
        return CheckResult(EXIT_FAIL, dict(base, state="failing", step=None), steps, None, notes)
    if rc == 77 or (cases and len(skipped) == len(cases)):
        reasons = unique([c.message for c in skipped] + loose)
        specific = [r for r in reasons if not _ALL_SKIPPED.match(r)]
        reason = "; ".join((specific or reasons or ["no reason given"])[:3])
        return CheckResult(EXIT_SKIP, dict(base, state="skipped", reason=reason), steps, None, notes)
    loose = unique(loose)
    for r in loose:
        notes.append(f"skipped (reported by the test program): {r}")
    n_skipped = len(skipped) + len(loose)
    return CheckResult(EXIT_OK, dict(base, state="passed", skipped_tests=n_skipped), steps, None, notes)


def readable_failure(text: str, root: Path = ROOT, limit: int = 15) -> list[str]:
    """A failure's text as the learner needs it: the check, its values, the test's message
    and a short file:line — without Catch2's 'FAILED:' banner or absolute paths."""
    out = []
    for line in text.strip().splitlines():
        if line.strip() == "FAILED:":
            continue
        if line.startswith("at "):
            loc = line[3:].strip()
            for prefix in (str(root) + "/", "../"):
                if loc.startswith(prefix):
                    loc = loc[len(prefix):]
            line = "at " + loc
        out.append(line.rstrip())
    if len(out) > limit:
        out = out[:limit] + ["..."]
    return out


_STATE_COLOUR = {"passed": "green", "failed": "red", "skipped": "yellow"}


def print_step_line(label: str, state: str, goal: str = "") -> None:
    """`  step 2      failed   (pin a buffer in place)`: one line per step."""
    say(f"  {label:<11} {paint(state.ljust(7), _STATE_COLOUR[state])}"
        + (f"  {paint(goal, 'dim')}" if goal else ""))


def does_not_compile(e: BuildFailed, no_gpu: Optional[NoGpuResult] = None) -> CheckResult:
    """The verdict when the learner's file does not build: the build's error is shown."""
    return CheckResult(EXIT_FAIL, {"state": "failing", "step": None, "reason": "does not compile"}, [],
                       build_error=e, no_gpu=no_gpu)


def _steps_text(steps: list) -> str:
    """'step 1', 'steps 1, 2 and 3', 'its steps'."""
    if not steps:
        return "its steps"
    if len(steps) == 1:
        return f"step {steps[0]}"
    return "steps " + ", ".join(map(str, steps[:-1])) + f" and {steps[-1]}"


def _steps_need(steps: list) -> str:
    """'step 1 needs', 'steps 1, 2 and 3 need'."""
    return _steps_text(steps) + (" needs" if len(steps) == 1 else " need")


def without_gpu_result(no: NoGpuResult) -> CheckResult:
    """The verdict of a check without a GPU. A failed SASS check is a failure (exit 1), but
    the chapter's state names a failing step only when it is the chapter's first: steps
    before it could not be checked here, so it is not known to be the first failure."""
    if no.build_error is not None:
        return does_not_compile(no.build_error, no)
    first = no.first_failed_step
    if first is None and no.failed:                 # a failed check of no known step
        return CheckResult(EXIT_FAIL, {"state": "failing", "step": None, "reason": "SASS check failed"}, [],
                           no_gpu=no)
    if first is not None and no.steps and first == no.steps[0]:
        return CheckResult(EXIT_FAIL, {"state": "failing", "step": first, "reason": "SASS check failed"}, [],
                           no_gpu=no)
    if first is not None:
        return CheckResult(EXIT_FAIL, {"state": "skipped", "reason": needs_gpu(no.reason, first), "compiles": True},
                           [], no_gpu=no)
    return CheckResult(EXIT_SKIP, {"state": "skipped", "reason": needs_gpu(no.reason), "compiles": True}, [],
                       no_gpu=no)


def _print_without_gpu(ch: Chapter, res: CheckResult, goals: dict) -> None:
    """Each step: what its compiled code showed, or that it was not checked here."""
    no = res.no_gpu
    say(f"  {paint('compiles', 'green')}    your {ch.exercise_rel} (built with the chapter's tests)")
    by_step: dict = {}
    for c in no.checks:
        by_step.setdefault(c.step, []).append(c)
    for k in no.steps:
        checks = by_step.get(k, [])
        failed = [c for c in checks if c.state == "failed"]
        passed = [c for c in checks if c.state == "passed"]
        skipped = [c for c in checks if c.state == "skipped"]
        if failed:
            print_step_line(f"step {k}", "failed", failed[0].label)
        elif passed:
            say(f"  {f'step {k}':<11} {paint('compiled code passed', 'green')}; "
                f"{paint('its tests need a GPU', 'dim')}")
        else:
            why = next((l.split(":", 1)[-1].strip() for c in skipped for l in c.output.splitlines()
                        if l.startswith("SKIP")), "")
            say(f"  {f'step {k}':<11} {paint('not checked here (no GPU)', 'yellow')}"
                + (f"; its compiled code not either: {why}" if why else ""))
    first = no.first_failed_step
    failed = no.failed
    if failed:
        shown = next((c for c in failed if c.step == first), failed[0])
        say()
        say(paint(f"first failure found here: {shown.label}"
                  + (f" (step {shown.step})" if shown.step is not None else ""), "red"))
        for line in shown.output.strip().splitlines()[-5:]:
            if line.strip() not in ("FAILED", "PASSED"):
                say("  " + line)
        if shown.step in goals:
            say(f"  (step {shown.step}: {goals[shown.step]})")
        unchecked = [k for k in no.steps if first is not None and k < first]
        if unchecked:
            say(f"  {_steps_text(unchecked)} before it could not be checked here: "
                f"{'it needs' if len(unchecked) == 1 else 'they need'} a GPU, so this is not known to be your first")
        say(f"hint: {hint_command(ch.num, shown.step if isinstance(shown.step, int) else None)}")
        say()
    say(paint(f"your exercise.cu compiles; {_steps_need(no.steps)} a GPU: {no.reason}", "yellow"))


def print_check(ch: Chapter, res: CheckResult, root: Path = ROOT) -> None:
    """The verdict: each step with its state and goal, steps passed of the chapter, then the
    first failure (name, message) and the hint of its step; or the build's error; or what
    could be checked without a GPU."""
    if res.build_error is not None:
        report_build_failure(res.build_error, ch)
        return
    goals = step_goals(ch)
    say(paint(f"chapter {ch.num}: {ch.title}", "bold"))
    if res.no_gpu is not None:
        _print_without_gpu(ch, res, goals)
        return
    for step in res.steps:
        label = f"step {step.number}" if step.number is not None else "other tests"
        print_step_line(label, step.state, goals.get(step.number, ""))
        for c in step.cases:
            if c.status == "failed":
                say(f"      {paint('failed', 'red')}   {c.name}")
            elif c.status == "skipped":
                say(f"      {paint('skipped', 'yellow')}  {c.name}: {c.message}")
    for note in res.notes:
        say(f"  note: {note}")
    total = res.state.get("steps_total", 0)
    if total:
        say(f"{res.state.get('steps_passed', 0)} of {total} steps passed")
    if res.code == EXIT_SKIP:
        say(paint(f"skipped: {res.state.get('reason')}", "yellow"))
    elif res.first_failure is not None:
        say()
        say(paint(f"first failure: {res.first_failure.name}", "red"))
        for line in readable_failure(res.first_failure.message, root):
            say("  " + line)
        say()
        say(f"hint: {hint_command(ch.num, res.first_failure.step)}")
    elif res.code == EXIT_FAIL:
        tail = [l for l in res.output.splitlines() if l.strip()][-MAX_ERROR_LINES:]
        if tail:
            say("the test program's last lines:")
            for line in tail:
                say("  " + line)
        say(f"hint: {hint_command(ch.num, None)}")
    elif res.code == EXIT_OK:
        say(paint(f"chapter {ch.num} passed", "green") + "   next: ./lab next")


def program_output_without(output: str, reason: str) -> str:
    """The test program's output for --verbose, without the SKIP line whose reason the
    verdict prints anyway (it would be shown twice)."""
    kept = [l for l in output.splitlines() if not (skip_lines(l) == [reason])]
    return "\n".join(kept).rstrip()


def run_check(ch: Chapter, tc: Toolchain, root: Path = ROOT, verbose: bool = False) -> CheckResult:
    """Builds the chapter's tests against the learner's exercise.cu and runs them (or, with
    no GPU, what needs none): the verdict, not yet printed nor remembered."""
    target = f"test_ch{ch.num}_learner"
    try:
        exe = build_target(tc, target, f"tests/{target}")
    except BuildFailed as e:
        return does_not_compile(e)
    folder = state_dir(root)
    folder.mkdir(parents=True, exist_ok=True)
    xml_path = folder / f"check-{ch.num}.xml"
    if xml_path.exists():
        xml_path.unlink()                 # a stale report must never stand in for this run
    say(f"running chapter {ch.num}'s tests on your exercise.cu...")
    rc, output = run_quiet([exe, "-r", "junit", "-o", xml_path], tc.env, tc.build, CHECK_TIMEOUT_S)
    (folder / f"check-{ch.num}.log").write_text(output, encoding="utf-8")
    xml_text = xml_path.read_text(encoding="utf-8", errors="replace") if xml_path.exists() else None
    res = interpret_check(rc, xml_text, output)
    res.output = output
    if verbose:
        shown = program_output_without(output, res.state.get("reason", ""))
        if shown:
            say(shown)
    if rc == 124:
        say(f"the tests ran over {CHECK_TIMEOUT_S} s and were stopped: a kernel may never finish")
    if res.nothing_ran:
        return without_gpu_result(check_without_gpu(ch, tc, res.state.get("reason", "")))
    return res


def check_chapter(ch: Chapter, tc: Toolchain, root: Path = ROOT, verbose: bool = False) -> int:
    """Checks the chapter, prints the verdict and remembers it for the table. Shared by
    check and watch."""
    require_exercise(ch)
    return conclude(ch, run_check(ch, tc, root, verbose), root)


def conclude(ch: Chapter, res: CheckResult, root: Path = ROOT) -> int:
    """The one place a verdict is printed and remembered; its exit code."""
    print_check(ch, res, root)
    remember(root, ch, res.state)
    return res.code


def cmd_check(args, root: Path = ROOT) -> int:
    """./lab check NN [--verbose]."""
    ch = chapter_of(args, root)
    require_exercise(ch)
    tc = setup(root, catch2_required=True)
    # Without them every SASS check skips; the steps they could not check say so themselves.
    ensure_sass_tools(tc, root, "for the SASS checks of your kernels", note_missing=False)
    return check_chapter(ch, tc, root, args.verbose)
