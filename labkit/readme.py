"""A chapter's README step table, read once for everything that needs a step's goal or
functions (./lab check and hint, and the consistency checks of steps.py)."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Optional

from .chapters import Chapter

_CODE_NAME = re.compile(r"`([A-Za-z_]\w*)(?:\(\))?`")


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


def read_text(path) -> str:
    """A file's text; '' when it is missing (its absence is a disagreement, not a crash)."""
    try:
        return path.read_text(encoding="utf-8")
    except OSError:
        return ""


def step_goals(ch: Chapter) -> dict[int, str]:
    """Step K -> its goal, from the README's step table ({} without one)."""
    return {k: row.goal for k, row in readme_steps(read_text(ch.readme)).items()}


def step_naming(rows: dict, name: str) -> Optional[int]:
    """The first step whose row of the table names the function or kernel `name`; for a
    kernel, else the first that names its launcher (`sgemm_tiled` for `sgemm_tiled_kernel`:
    the course names a launcher's kernel so, and the SASS checks name kernels, a template's
    as `sum_fast_kernel<`). None when no row names either."""
    name = name.rstrip("<")
    candidates = [name] + ([name[:-len("_kernel")]] if name.endswith("_kernel") else [])
    for candidate in candidates:
        for k in sorted(rows):
            if candidate in rows[k].functions:
                return k
    return None
