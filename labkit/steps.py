"""A chapter's steps, written once: the README's step table (step K, its goal, its
functions) is the reference; the exercise's `TODO(K):` marks, the hints' `## Step K`
headings, the tests' `[stepK]` tags and the steps of meson.build's SASS checks must agree
with it, and the speed bars it names (`kName` = value) with the tests' constants. The table itself is read by readme.py;
tests/cpu/check_steps.py fails when they disagree."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Callable, Optional

from .chapters import Chapter
from .hints import parse_hints
from .readme import read_text, readme_steps, step_naming
from .source import functions_by_step, step_items, top_level_items

_TEST_TAG = re.compile(r"\[step(\d+)\]")
# A speed bar is a named constant of the chapter's tests; the README names it with its value,
# `kName` = 0.88, and the two must agree (they drifted while the bars were being measured).
_README_BAR = re.compile(r"`(k[A-Z]\w*)` = ([0-9]+(?:\.[0-9]+)?)")
_TEST_BAR = re.compile(r"constexpr\s+double\s+(k[A-Z]\w*)\s*=\s*([0-9]+(?:\.[0-9]+)?)\s*;")


def test_steps(text: str) -> set:
    """The K of every `[stepK]` tag in a chapter's test source."""
    return {int(k) for k in _TEST_TAG.findall(text)}


def hint_steps(text: str) -> set:
    """The steps that hints.md has a hint for."""
    return {h.step for h in parse_hints(text) if h.step is not None}


def _cells(line: str) -> list[str]:
    return [c.strip() for c in line.strip().strip("|").split("|")]


def _value_in_cell(cell: str):
    """The bar's value in a docs table cell: '1.35', '1.55 (√2.44 = 1.56)' -> 1.55, 'middle
    of 1.04 and 1.15: 1.10' -> 1.10 (what follows the last colon), 'middle: 8 ms' -> 8."""
    tail = cell.rsplit(":", 1)[-1] if ":" in cell else cell
    m = re.search(r"[0-9]+(?:\.[0-9]+)?", tail)
    return float(m.group(0)) if m else None


def quoted_bars(text: str) -> list[tuple[str, float, str]]:
    """Every speed bar a README or a lesson quotes: (name, value, where): `kName` = value in
    prose, and the rows of a table whose first column is the bar (`kName`) and one of whose
    later columns is headed value, middle or bar (the last such column holds it)."""
    found = [(name, float(value), f"`{name}` = {value}") for name, value in _README_BAR.findall(text)]
    lines = text.splitlines()
    value_col = None
    for i, line in enumerate(lines):
        if not line.lstrip().startswith("|"):
            value_col = None
            continue
        cells = _cells(line)
        if value_col is None:
            heads = [c.lower() for c in cells]
            cols = [k for k, h in enumerate(heads) if k > 0 and (h.startswith(("value", "middle")) or h == "bar")]
            value_col = cols[-1] if cols else -1
            continue
        names = re.findall(r"`(k[A-Z]\w*)`", cells[0].split("(", 1)[0]) if cells else []
        if names and 0 < value_col < len(cells):
            v = _value_in_cell(cells[value_col])
            if v is not None:
                found += [(name, v, f"the table row of `{name}`") for name in names]
    return found


def bar_disagreements(text: str, test_text: str, test_name: str, where: str = "README") -> list[str]:
    """Each bar `where` quotes (prose or table) against the `constexpr double kName = value;`
    of the chapter's tests, one sentence per difference."""
    bars = {name: float(value) for name, value in _TEST_BAR.findall(test_text)}
    problems = []
    for name, value, how in quoted_bars(text):
        if name not in bars:
            problems.append(f"{where} names the bar {name}, which {test_name} does not define")
        elif value != bars[name]:
            problems.append(f"{where} says {name} = {value:g} ({how}); {test_name} sets it to {bars[name]:g}")
    return problems


def _names(steps) -> str:
    """'1, 2, 3' (or 'none')."""
    return ", ".join(str(k) for k in sorted(steps)) or "none"


def read_source(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return ""


def kernel_steps(ch: Chapter) -> Callable[[str], Optional[int]]:
    """kernel -> its step, from the README's step table (the reference, which the learner
    does not edit): the row naming the kernel or its launcher, else the row naming a
    function whose definition in the solution launches it. The learner's TODO(K) comments,
    which they edit and delete, count only where the table says nothing (a chapter being
    written, with no table yet)."""
    rows = readme_steps(read_text(ch.readme))
    launchers = [i for i in top_level_items(read_source(ch.solution)) if i.is_function]
    marked = {i.name: min(i.steps) for i in step_items(read_source(ch.exercise)) if i.steps}

    def step_of(kernel: str) -> Optional[int]:
        name = kernel.rstrip("<")
        named = step_naming(rows, name)
        if named is not None:
            return named
        users = [step_naming(rows, i.name) for i in launchers if i.name != name and name in i.identifiers()]
        users = [k for k in users if k is not None]
        if users:
            return min(users)
        return None if rows else marked.get(name)
    return step_of


# A SASS check of a chapter's meson.build: {'kernel': 'K', ... 'step': N, ...} (one line or several).
_SASS_CHECK = re.compile(r"\{'kernel': '(?P<kernel>[^']+)'(?P<rest>[^}]*)\}")
_SASS_STEP = re.compile(r"'step': (\d+)")


def sass_check_disagreements(ch: Chapter) -> list[str]:
    """Each SASS check of the chapter's meson.build names its step ('step': K: ./lab check
    reads it in the check's name, and sass_check skips the check where needs.txt says the
    step cannot run); that step must be the one the README's table gives its kernel."""
    step_of = kernel_steps(ch)
    problems = []
    for m in _SASS_CHECK.finditer(read_text(ch.folder / "meson.build")):
        kernel, said = m.group("kernel"), _SASS_STEP.search(m.group("rest"))
        table = step_of(kernel)
        if said is None:
            problems.append(f"meson.build's SASS check of {kernel} names no step ('step': {table or 'K'})")
        elif table is not None and int(said.group(1)) != table:
            problems.append(f"meson.build's SASS check of {kernel} says step {said.group(1)}; "
                            f"README's step table gives {kernel} to step {table}")
    return problems


def disagreements(ch: Chapter) -> list[str]:
    """Where the README's step table, the exercise's TODO(K) marks, the hints and the tests'
    [stepK] tags disagree, one sentence each ([] when they agree)."""
    table = readme_steps(read_text(ch.readme))
    if not table:
        return [f"{ch.name}/README.md has no step table (| step | goal | functions | ... |)"]
    problems = []
    expected = set(range(1, len(table) + 1))
    if set(table) != expected:
        problems.append(f"README's steps are {_names(table)}: they must be 1 to {len(table)}")
    todo = functions_by_step(read_text(ch.exercise))
    sources = [("exercise.cu's TODO(K): marks", set(todo)),
               ("hints.md's `## Step K` headings", hint_steps(read_text(ch.hints))),
               (f"{ch.tests.name}'s [stepK] tags", test_steps(read_text(ch.tests)))]
    for what, steps in sources:
        if steps != set(table):
            problems.append(f"README's step table has steps {_names(table)}, {what} name steps "
                            f"{_names(steps)}")
    for k, row in sorted(table.items()):
        marked = todo.get(k, [])
        if k in todo and sorted(row.functions) != sorted(marked):
            problems.append(f"README's step {k} lists functions {', '.join(row.functions) or 'none'}; "
                            f"exercise.cu's TODO({k}) marks {', '.join(marked)}")
    tests = read_text(ch.tests)
    return (problems + sass_check_disagreements(ch) + bar_disagreements(read_text(ch.readme), tests, ch.tests.name)
            + bar_disagreements(read_text(ch.docs), tests, ch.tests.name, f"docs/{ch.docs.name}"))
