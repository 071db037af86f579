"""Catch2's JUnit report (v2 and v3) as test cases grouped into the chapter's steps."""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from dataclasses import dataclass
from typing import Optional

from .core import EXIT_FAIL, LabError

SKIP_LINE = re.compile(r"^\s*SKIP(?:PED)?:\s*(.*\S)\s*$")


@dataclass
class CaseResult:
    """One <testcase> of the JUnit report (a test case, or one section of it)."""
    name: str
    status: str                 # passed | failed | skipped
    message: str = ""           # failure text, or the skip reason
    step: Optional[int] = None


@dataclass
class Step:
    """A step of a chapter: the test cases whose names start with 'step N: '."""
    number: Optional[int]
    cases: list

    @property
    def state(self) -> str:
        if any(c.status == "failed" for c in self.cases):
            return "failed"
        if all(c.status == "skipped" for c in self.cases):
            return "skipped"
        return "passed"


def step_of(name: str) -> Optional[int]:
    """The N of a test named 'step N: ...' (the course's naming convention)."""
    m = re.match(r"\s*step\s+(\d+)\b", name, re.IGNORECASE)
    return int(m.group(1)) if m else None


def skip_lines(output: str) -> list[str]:
    """The reasons of the 'SKIP: why' lines a test program printed (the no-GPU line, v2
    skips)."""
    return [m.group(1) for m in map(SKIP_LINE.match, output.splitlines()) if m]


def skip_reason(text: str) -> str:
    """The reason in a v3 <skipped> text ('SKIPPED\\nwhy\\nat file:line')."""
    lines = [l.strip() for l in (text or "").strip().splitlines()]
    lines = [l for l in lines if l and l != "SKIPPED" and not l.startswith("at ")]
    reason = " ".join(lines)
    m = SKIP_LINE.match(reason)
    return (m.group(1) if m else reason) or "no reason given"


def parse_junit(text: str) -> list[CaseResult]:
    """Test cases of a Catch2 v2 or v3 JUnit report. Failures are <failure> or <error>;
    skips are <skipped> (v3) or a 'SKIP: why' line captured in the test case's
    <system-err>/<system-out> (v2 has no SKIP, our CML_SKIP prints it)."""
    try:
        root = ET.fromstring(text)
    except ET.ParseError as e:
        raise LabError(f"the test report is not valid XML ({e})", EXIT_FAIL) from e
    cases = []
    for tc in root.iter("testcase"):
        name = tc.get("name", "")
        failures = [el for el in tc if el.tag in ("failure", "error")]
        skips = [el for el in tc if el.tag == "skipped"]
        if failures:
            first = failures[0]
            case = CaseResult(name, "failed", (first.text or first.get("message") or "").strip())
        elif skips:
            case = CaseResult(name, "skipped", skip_reason(skips[0].text or skips[0].get("message", "")))
        else:
            captured = "\n".join((el.text or "") for el in tc if el.tag in ("system-err", "system-out"))
            reasons = skip_lines(captured)
            case = CaseResult(name, "skipped", reasons[0]) if reasons else CaseResult(name, "passed")
        case.step = step_of(name)
        cases.append(case)
    return cases


def group_steps(cases: list[CaseResult]) -> list[Step]:
    """Test cases grouped by step number, in step order (unnumbered ones last)."""
    groups: dict = {}
    for c in cases:
        groups.setdefault(c.step, []).append(c)
    numbered = sorted(k for k in groups if k is not None)
    return [Step(k, groups[k]) for k in numbered] + ([Step(None, groups[None])] if None in groups else [])
