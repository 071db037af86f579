#!/usr/bin/env python3
"""The "(step K; ./lab hint NN)" that ends a failure message points the learner at a hint:
it must name the test file's own chapter, and, inside a test case, the case's step or an
earlier one (a later step's case may send the learner back to an earlier lesson; a pointer
forward, to a step not reached yet, is always wrong). This fails, naming the file and line,
where one does not.

Why a check and not a suffix made at run time from the case's tag: the suffix ends literals
that pass through helpers of many signatures (const char* advice, std::string, INFO
streams), and messages written in helpers shared by several steps name the step whose lesson
they are about, which is not always the running case's. The property that matters — the
pointer agrees with the chapter and never points ahead — is checked here, once, for all.

Run: python3 tests/cpu/check_step_hints.py (Meson runs it in the cpu suite). Exit 0 or 1.
"""

import re
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
SUFFIX = re.compile(r"\(step (\d+); \./lab hint (\d\d)\)")
CASE = re.compile(r'^TEST_CASE\(\s*"(?:[^"\\]|\\.)*"(?:\s*"(?:[^"\\]|\\.)*")*\s*,\s*"([^"]*)"', re.M)


def problems_in(path: Path, chapter: str) -> list:
    text = path.read_text(encoding="utf-8")
    cases = []                                   # (start, end of body, steps of its tags)
    for m in CASE.finditer(text):
        end = text.find("\n}\n", m.end())
        cases.append((m.start(), len(text) if end < 0 else end, [int(s) for s in re.findall(r"\[step(\d+)\]", m.group(1))]))
    out = []
    for m in SUFFIX.finditer(text):
        line = text.count("\n", 0, m.start()) + 1
        step, hint = int(m.group(1)), m.group(2)
        if hint != chapter:
            out.append(f"{path.relative_to(REPO)}:{line}: '{m.group(0)}' in chapter {chapter}'s tests")
        inside = [c for c in cases if c[0] <= m.start() < c[1]]
        if inside and inside[-1][2] and step > max(inside[-1][2]):
            out.append(f"{path.relative_to(REPO)}:{line}: '{m.group(0)}' in a case of step "
                       f"{max(inside[-1][2])}: it points at a step the learner has not reached")
    return out


def main() -> int:
    files = sorted(REPO.glob("tests/test_[0-9][0-9]_*.cpp")) + sorted(REPO.glob("tests/test_[0-9][0-9]_*.hpp"))
    problems, seen = [], 0
    for f in files:
        problems += problems_in(f, f.name[5:7])
        seen += len(SUFFIX.findall(f.read_text(encoding="utf-8")))
    for p in problems:
        print(f"FAILED: {p}")
    if not problems:
        print(f"{seen} step pointers in {len(files)} test files name their chapter and never a later step")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
