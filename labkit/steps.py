"""A chapter's steps, written once: the README's step table (step K, its goal, its
functions) is the reference; the exercise's `TODO(K):` marks, the hints' `## Step K`
headings and the tests' `[stepK]` tags must agree with it, and the speed bars it names
(`kName` = value) with the tests' constants. `./lab hint` and `./lab check` take the steps'
goals from the table; tests/cpu/check_steps.py fails when they disagree."""

from __future__ import annotations

import re
from dataclasses import dataclass

from .chapters import Chapter
from .hints import parse_hints
from .source import functions_by_step

_CODE_NAME = re.compile(r"`([A-Za-z_]\w*)(?:\(\))?`")
_TEST_TAG = re.compile(r"\[step(\d+)\]")
# A speed bar is a named constant of the chapter's tests; the README names it with its value,
# `kName` = 0.88, and the two must agree (they drifted while the bars were being measured).
_README_BAR = re.compile(r"`(k[A-Z]\w*)` = ([0-9]+(?:\.[0-9]+)?)")
_TEST_BAR = re.compile(r"constexpr\s+double\s+(k[A-Z]\w*)\s*=\s*([0-9]+(?:\.[0-9]+)?)\s*;")


@dataclass
class StepRow:
    """One row of a README's step table."""
    number: int
    goal: str
    functions: list


def _cells(line: str) -> list[str]:
    """The cells of a Markdown table row."""
    return [c.strip() for c in line.strip().strip("|").split("|")]


def readme_steps(text: str) -> dict[int, StepRow]:
    """The step table: the Markdown table whose header has the columns `step`, `goal` and
    `functions` (functions in backticks). {} when the README has none."""
    lines = text.splitlines()
    for i, line in enumerate(lines):
        if not line.lstrip().startswith("|"):
            continue
        header = [c.lower() for c in _cells(line)]
        if not {"step", "goal", "functions"} <= set(header):
            continue
        col = {name: header.index(name) for name in ("step", "goal", "functions")}
        rows: dict[int, StepRow] = {}
        for row in lines[i + 2:]:
            if not row.lstrip().startswith("|"):
                break
            cells = _cells(row)
            if len(cells) < len(header) or not cells[col["step"]].isdigit():
                continue
            k = int(cells[col["step"]])
            rows[k] = StepRow(k, cells[col["goal"]], _CODE_NAME.findall(cells[col["functions"]]))
        return rows
    return {}


def test_steps(text: str) -> set:
    """The K of every `[stepK]` tag in a chapter's test source."""
    return {int(k) for k in _TEST_TAG.findall(text)}


def hint_steps(text: str) -> set:
    """The steps that hints.md has a hint for."""
    return {h.step for h in parse_hints(text) if h.step is not None}


def _read(path) -> str:
    """A file's text; '' when it is missing (its absence is a disagreement, not a crash)."""
    try:
        return path.read_text(encoding="utf-8")
    except OSError:
        return ""


def step_goals(ch: Chapter) -> dict[int, str]:
    """Step K -> its goal, from the README's step table ({} without one)."""
    return {k: row.goal for k, row in readme_steps(_read(ch.readme)).items()}


def bar_disagreements(readme_text: str, test_text: str, test_name: str) -> list[str]:
    """Each `kName` = value of the README against the `constexpr double kName = value;` of the
    chapter's tests, one sentence per difference."""
    bars = {name: float(value) for name, value in _TEST_BAR.findall(test_text)}
    problems = []
    for name, value in _README_BAR.findall(readme_text):
        if name not in bars:
            problems.append(f"README names the bar {name}, which {test_name} does not define")
        elif float(value) != bars[name]:
            problems.append(f"README says {name} = {value}; {test_name} sets it to {bars[name]:g}")
    return problems


def _names(steps) -> str:
    """'1, 2, 3' (or 'none')."""
    return ", ".join(str(k) for k in sorted(steps)) or "none"


def disagreements(ch: Chapter) -> list[str]:
    """Where the README's step table, the exercise's TODO(K) marks, the hints and the tests'
    [stepK] tags disagree, one sentence each ([] when they agree)."""
    table = readme_steps(_read(ch.readme))
    if not table:
        return [f"{ch.name}/README.md has no step table (| step | goal | functions | ... |)"]
    problems = []
    expected = set(range(1, len(table) + 1))
    if set(table) != expected:
        problems.append(f"README's steps are {_names(table)}: they must be 1 to {len(table)}")
    todo = functions_by_step(_read(ch.exercise))
    sources = [("exercise.cu's TODO(K): marks", set(todo)),
               ("hints.md's `## Step K` headings", hint_steps(_read(ch.hints))),
               (f"{ch.tests.name}'s [stepK] tags", test_steps(_read(ch.tests)))]
    for what, steps in sources:
        if steps != set(table):
            problems.append(f"README's step table has steps {_names(table)}, {what} name steps "
                            f"{_names(steps)}")
    for k, row in sorted(table.items()):
        marked = todo.get(k, [])
        if k in todo and sorted(row.functions) != sorted(marked):
            problems.append(f"README's step {k} lists functions {', '.join(row.functions) or 'none'}; "
                            f"exercise.cu's TODO({k}) marks {', '.join(marked)}")
    return problems + bar_disagreements(_read(ch.readme), _read(ch.tests), ch.tests.name)
