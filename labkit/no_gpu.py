"""./lab check on a machine without a usable GPU: the learner's file compiled (the tests
were built against it), the checks that need no GPU run (the SASS of their kernels, where
cuobjdump is present), and the steps that need a GPU named, with the reason: exit 77."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from .build import BuildFailed, build_targets, meson_tests
from .chapters import Chapter
from .core import EXIT_FAIL, EXIT_SKIP, ROOT
from .diagnostics import report_build_failure
from .hints import hint_command
from .processes import run_quiet
from .source import step_items
from .state import remember
from .steps import step_goals
from .terminal import paint, say
from .toolchain import Toolchain

SASS_SUITE = "learner_sass"     # tests/cpu/meson.build: the SASS checks of the learner's kernels
_NAMED_STEP = re.compile(r"\(step (\d+)\)$")


@dataclass
class SassCheck:
    """One SASS check of a learner's kernel (sass_check BINARY KERNEL PATTERN [--absent]) and
    its outcome."""
    name: str
    cmd: list
    kernel: str
    step: object = None          # the step whose TODO marks the kernel (None: unknown)
    rc: int = 0
    output: str = ""

    @property
    def expectation(self) -> str:
        """'has LDG.E.128' or 'lacks STL', as the check asks."""
        return f"{'lacks' if '--absent' in self.cmd else 'has'} {self.cmd[3]}"

    @property
    def state(self) -> str:
        return {0: "passed", 77: "skipped"}.get(self.rc, "failed")


def _suites(test: dict) -> set:
    """A test's suites without Meson's `project:` prefix."""
    return {s.split(":", 1)[-1] for s in test.get("suite", [])}


def learner_sass_checks(ch: Chapter, build: Path) -> list[SassCheck]:
    """The chapter's SASS checks of the learner's program, as Meson registered them, each
    with the step its kernel belongs to (read from the TODO marks of exercise.cu)."""
    try:
        items = step_items(ch.exercise.read_text(encoding="utf-8", errors="replace"))
    except OSError:
        items = []
    step_of = {i.name: min(i.steps) for i in items if i.steps}
    checks = []
    for t in meson_tests(build):
        if {SASS_SUITE, f"ch{ch.num}"} <= _suites(t) and len(t.get("cmd", [])) >= 4:
            kernel = t["cmd"][2]
            named = _NAMED_STEP.search(t.get("name", ""))   # "... (step K)": a provided kernel
            step = int(named.group(1)) if named else step_of.get(kernel.rstrip("<"))
            checks.append(SassCheck(t.get("name", kernel), t["cmd"], kernel, step))
    return checks


def _steps_need(steps: list) -> str:
    """'step 1 needs', 'steps 1, 2 and 3 need'."""
    if not steps:
        return "its steps need"
    if len(steps) == 1:
        return f"step {steps[0]} needs"
    return "steps " + ", ".join(map(str, steps[:-1])) + f" and {steps[-1]} need"


def check_without_gpu(ch: Chapter, tc: Toolchain, reason: str, root: Path = ROOT) -> int:
    """The learner's file compiles (the tests built); run the SASS checks of their kernels,
    then name the steps that need a GPU and why. A SASS check that fails is a failed step."""
    checks = learner_sass_checks(ch, tc.build)
    if checks:
        try:
            build_targets(tc, [f"ch{ch.num}", "sass_check"], f"build-ch{ch.num}-sass.log")
        except BuildFailed as e:
            report_build_failure(e, ch)
            remember(root, ch, {"state": "failing", "step": None, "reason": "does not compile"})
            return EXIT_FAIL
        for c in checks:
            c.rc, c.output = run_quiet(c.cmd, tc.env, tc.build, timeout=300)
    goals = step_goals(ch)
    say(paint(f"chapter {ch.num}: {ch.title}", "bold"))
    say(f"  {paint('compiles', 'green')}   your {ch.exercise_rel} (built with the chapter's tests)")
    for c in checks:
        label = f"step {c.step}" if c.step is not None else "SASS"
        detail = c.output.strip().splitlines()
        why = f": {detail[0].split(':', 1)[-1].strip()}" if c.state == "skipped" and detail else ""
        say(f"  {paint(c.state.ljust(8), {'passed': 'green', 'skipped': 'yellow'}.get(c.state, 'red'))}"
            f"   {label}: {c.kernel.rstrip('<')}'s SASS {c.expectation} (no GPU needed){why}")
    failed = [c for c in checks if c.state == "failed"]
    if failed:
        _print_failure(ch, failed[0], goals)
    steps = sorted(goals) or sorted({k for i in step_items(ch.exercise.read_text(errors="replace"))
                                     for k in i.steps})
    why = reason or "no usable GPU"
    say(paint(f"your exercise.cu compiles; {_steps_need(steps)} a GPU: {why}", "yellow"))
    if failed:
        remember(root, ch, {"state": "failing", "step": failed[0].step, "reason": "SASS check failed"})
        return EXIT_FAIL
    remember(root, ch, {"state": "skipped", "reason": f"needs a GPU: {why}", "compiles": True})
    return EXIT_SKIP


def _print_failure(ch: Chapter, first: SassCheck, goals: dict) -> None:
    """The failed SASS check, what its step is about, and the step's hint."""
    say()
    say(paint(f"first failure: {first.name}", "red"))
    for line in first.output.strip().splitlines()[-5:]:
        say("  " + line)
    if first.step in goals:
        say(f"  (step {first.step}: {goals[first.step]})")
    say(f"hint: {hint_command(ch.num, first.step)}")
    say()
