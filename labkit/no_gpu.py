"""./lab check on a machine without a usable GPU: the learner's file compiled (the tests
were built against it), the checks that need no GPU run (the SASS of their kernels, where
cuobjdump is present), and the steps whose tests need a GPU said to be not checked here.
It returns what it found; check.py prints it and remembers it."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Optional

from .build import BuildFailed, build_targets, meson_tests
from .chapters import Chapter
from .processes import run_quiet
from .readme import step_goals
from .source import step_items
from .steps import kernel_steps, read_source
from .terminal import paint, progress
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
    step: object = None          # the step of the kernel, by the README's table (None: unknown)
    rc: int = 0
    output: str = ""

    @property
    def expectation(self) -> str:
        """'has LDG.E.128' or 'lacks STL', as the check asks."""
        return f"{'lacks' if '--absent' in self.cmd else 'has'} {self.cmd[3]}"

    @property
    def label(self) -> str:
        """"sum_pipeline_kernel's SASS has LDGDEPBAR" (a template's '<' left out)."""
        return f"{self.kernel.rstrip('<')}'s SASS {self.expectation}"

    @property
    def state(self) -> str:
        return {0: "passed", 77: "skipped"}.get(self.rc, "failed")


@dataclass
class NoGpuResult:
    """What could be checked without a GPU, step by step."""
    reason: str                                 # why there is no GPU to run the tests on
    checks: list = field(default_factory=list)  # SassCheck, as run
    steps: list = field(default_factory=list)   # the chapter's steps, in order
    build_error: Optional[BuildFailed] = None   # the learner's program did not build

    @property
    def failed(self) -> list:
        return [c for c in self.checks if c.state == "failed"]

    @property
    def first_failed_step(self) -> Optional[int]:
        steps = [c.step for c in self.failed if isinstance(c.step, int)]
        return min(steps) if steps else None


def _suites(test: dict) -> set:
    """A test's suites without Meson's `project:` prefix."""
    return {s.split(":", 1)[-1] for s in test.get("suite", [])}


def learner_sass_checks(ch: Chapter, build: Path) -> list[SassCheck]:
    """The chapter's SASS checks of the learner's program, as Meson registered them, each
    with the step its kernel belongs to (kernel_steps)."""
    step_of = kernel_steps(ch)
    checks = []
    for t in meson_tests(build):
        if {SASS_SUITE, f"ch{ch.num}"} <= _suites(t) and len(t.get("cmd", [])) >= 4:
            kernel = t["cmd"][2]
            named = _NAMED_STEP.search(t.get("name", ""))   # "... (step K)": a provided kernel
            step = int(named.group(1)) if named else step_of(kernel)
            checks.append(SassCheck(t.get("name", kernel), t["cmd"], kernel, step))
    return sorted(checks, key=lambda c: (c.step if isinstance(c.step, int) else 1 << 30))


def chapter_steps(ch: Chapter) -> list[int]:
    """The chapter's steps: the README's table, else the exercise's TODO(K) marks."""
    goals = step_goals(ch)
    if goals:
        return sorted(goals)
    return sorted({k for i in step_items(read_source(ch.exercise)) for k in i.steps})


def check_without_gpu(ch: Chapter, tc: Toolchain, reason: str) -> NoGpuResult:
    """The learner's file compiles (the tests built); runs the SASS checks of their kernels,
    one line each as it ends (cuobjdump disassembles the program once: cml/sass.hpp keeps
    its text for the next check)."""
    res = NoGpuResult(reason=reason or "no usable GPU", checks=learner_sass_checks(ch, tc.build),
                      steps=chapter_steps(ch))
    if not res.checks:
        return res
    try:
        build_targets(tc, [f"ch{ch.num}", "sass_check"], f"build-ch{ch.num}-sass.log")
    except BuildFailed as e:
        res.build_error = e
        return res
    progress(f"checking your compiled code (no GPU needed): {len(res.checks)} SASS check(s)...")
    colours = {"passed": "green", "skipped": "yellow", "failed": "red"}
    for c in res.checks:
        c.rc, c.output = run_quiet(c.cmd, tc.env, tc.build, timeout=300)
        label = f"step {c.step}" if c.step is not None else "SASS"
        progress(f"  {paint(c.state.ljust(8), colours[c.state])} {label}: {c.label}")
    return res
