"""./lab diff: the learner's exercise.cu against the solution, all of it or one step's
functions. It spoils the chapter, so it says so and, on a terminal, asks first."""

from __future__ import annotations

import difflib
import sys
from pathlib import Path

from .chapters import Chapter, chapter_of, require_exercise
from .core import EXIT_FAIL, EXIT_OK, EXIT_USAGE, ROOT, LabError
from .readme import read_text, readme_steps
from .source import SourceItem, step_definitions, step_items, top_level_items
from .terminal import is_terminal, paint, say


def _read(path: Path, missing: str) -> str:
    """A file's text, or a LabError saying what is missing."""
    try:
        return path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        raise LabError(missing, EXIT_FAIL)


def read_pair(ch: Chapter) -> tuple[str, str]:
    """(the learner's exercise.cu, the solution's), as text."""
    require_exercise(ch)
    mine = _read(ch.exercise, f"{ch.exercise_rel} cannot be read")
    theirs = _read(ch.solution, f"{ch.solution_rel} is missing")
    return mine, theirs


def unified(mine: str, theirs: str, mine_label: str, theirs_label: str) -> list[str]:
    """difflib's unified diff of two texts, as lines."""
    return list(difflib.unified_diff(mine.splitlines(keepends=True), theirs.splitlines(keepends=True),
                                     fromfile=mine_label, tofile=theirs_label))


def exercise_diff(ch: Chapter) -> list[str]:
    """Unified diff lines of the learner's exercise.cu against the solution's."""
    mine, theirs = read_pair(ch)
    return unified(mine, theirs, f"{ch.exercise_rel} (yours)", ch.solution_rel)


def solution_items_for(step_names: set, mine: list[SourceItem], theirs: list[SourceItem]) -> list[SourceItem]:
    """The solution's definitions of a step: those named like the step's, plus the helpers
    the solution added (names the starter does not define) that they use, transitively."""
    starter_names = {i.name for i in mine}
    wanted, queue = set(step_names), list(step_names)
    by_name: dict = {}
    for item in theirs:
        by_name.setdefault(item.name, []).append(item)
    while queue:
        for item in by_name.get(queue.pop(), []):
            for used in item.identifiers() & set(by_name):
                if used not in wanted and used not in starter_names:
                    wanted.add(used)
                    queue.append(used)
    return [i for i in theirs if i.name in wanted]


def _joined(items: list[SourceItem]) -> str:
    """Definitions one after the other, a blank line apart, as in a source file."""
    return "\n\n".join(i.text.rstrip("\n") for i in items) + "\n"


def learner_step_items(ch: Chapter, step: int, mine_text: str) -> list[SourceItem]:
    """Step K's definitions in the learner's file: the functions the README's step table
    lists for it, and what only they use (so editing or deleting a TODO comment changes
    nothing). A chapter without a table yet (being written) falls back to the TODO(K) marks."""
    rows = readme_steps(read_text(ch.readme))
    if rows:
        if step not in rows:
            raise LabError(f"chapter {ch.num} has no step {step} (steps: "
                           f"{', '.join(map(str, sorted(rows)))})", EXIT_USAGE)
        others = {f for k, row in rows.items() if k != step for f in row.functions}
        return step_definitions(top_level_items(mine_text), rows[step].functions, others)
    mine = step_items(mine_text)
    chosen = [i for i in mine if step in i.steps]
    if not chosen:
        steps = sorted({k for i in mine for k in i.steps})
        raise LabError(f"{ch.exercise_rel} has no TODO({step}) (steps: "
                       f"{', '.join(map(str, steps)) or 'none'})", EXIT_USAGE)
    return chosen


def step_diff(ch: Chapter, step: int) -> list[str]:
    """Unified diff of one step's definitions only (the learner's, by the README's step
    table, and the solution's of the same names with the helpers they use)."""
    mine_text, theirs_text = read_pair(ch)
    chosen = learner_step_items(ch, step, mine_text)
    rows = readme_steps(read_text(ch.readme))
    names = {i.name for i in chosen if i.name} | set(rows[step].functions if step in rows else [])
    theirs = solution_items_for(names, top_level_items(mine_text), top_level_items(theirs_text))
    listed = ", ".join(i.name for i in chosen if i.is_function) or "none of its functions (deleted or renamed?)"
    return unified(_joined(chosen) if chosen else "", _joined(theirs),
                   f"{ch.exercise_rel} (yours), step {step}: {listed}", f"{ch.solution_rel}, step {step}")


def colour_diff_line(line: str) -> str:
    """Colours one diff line the way git does: removed red, added green, hunks cyan."""
    if line.startswith(("+++", "---")):
        return paint(line, "bold")
    if line.startswith("@@"):
        return paint(line, "cyan")
    if line.startswith("+"):
        return paint(line, "green")
    if line.startswith("-"):
        return paint(line, "red")
    return line


def spoiler_agreed(ch: Chapter, step, yes: bool) -> bool:
    """Warns that the diff shows the solution; on a terminal the learner must agree (--yes
    skips the question). Off a terminal nobody can answer, so the warning is enough."""
    what = f"step {step} of chapter {ch.num}" if step is not None else f"the whole of chapter {ch.num}"
    say(paint(f"this shows the solution of {what}: it spoils the exercise.", "yellow"), sys.stderr)
    if yes or not is_terminal(sys.stdin):
        return True
    if step is None:
        say(f"(./lab hint {ch.num} gives one hint at a time; ./lab diff {ch.num} --step K "
            "shows one step)", sys.stderr)
    sys.stderr.write("show it? [y/N] ")
    sys.stderr.flush()
    try:
        answer = sys.stdin.readline()
    except (OSError, ValueError):
        return False
    return answer.strip().lower() in ("y", "yes")


def cmd_diff(args, root: Path = ROOT) -> int:
    """Shows what separates the learner's file from the solution (a last resort after hints)."""
    ch = chapter_of(args, root)
    lines = step_diff(ch, args.step) if args.step is not None else exercise_diff(ch)
    if not lines:
        say(f"your {ch.exercise_rel} is identical to the solution"
            + (f" in step {args.step}" if args.step is not None else ""))
        return EXIT_OK
    if not spoiler_agreed(ch, args.step, args.yes):
        say("not shown.")
        return EXIT_OK
    for line in lines:
        say(colour_diff_line(line.rstrip("\n")))
        if not line.endswith("\n"):
            say("\\ No newline at end of file")
    return EXIT_OK
