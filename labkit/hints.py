"""./lab hint: the chapter's hints.md, one `## ` section at a time (or one step's)."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Optional

from .chapters import chapter_of
from .readme import step_goals
from .core import EXIT_FAIL, EXIT_OK, EXIT_USAGE, ROOT, LabError
from .state import load_state, save_state
from .terminal import display_path, paint, say


@dataclass
class Hint:
    """One `## ` section of hints.md."""
    title: str
    body: str
    step: Optional[int]


def parse_hints(text: str) -> list[Hint]:
    """Each `## ` heading starts a hint; its step is the 'Step N' in the heading. Text
    before the first heading (the file's own title) is not a hint."""
    hints: list[Hint] = []
    title, body = None, []
    for line in text.splitlines():
        if line.startswith("## "):
            if title is not None:
                hints.append(_make_hint(title, body))
            title, body = line[3:].strip(), []
        elif title is not None:
            body.append(line)
    if title is not None:
        hints.append(_make_hint(title, body))
    return hints


def _make_hint(title: str, body: list[str]) -> Hint:
    """Builds a Hint, reading the step number out of its heading."""
    m = re.search(r"\bstep\s+(\d+)", title, re.IGNORECASE)
    return Hint(title=title, body="\n".join(body).strip("\n"), step=int(m.group(1)) if m else None)


def hint_command(num: str, step: Optional[int]) -> str:
    """The hint to read after a failure: the failing step's, when the step is known."""
    return f"./lab hint {num}" + (f" --step {step}" if step is not None else "")


def show_hint(hint: Hint, index: int, total: int, goal: str = "") -> None:
    """Prints one hint with its position, so the learner knows how many are left; with the
    step's goal from the README when there is one."""
    say(paint(f"hint {index} of {total}: {hint.title}", "bold"))
    if goal:
        say(paint(f"(step {hint.step}: {goal})", "dim"))
    say()
    say(hint.body)
    say()


def _load_hints(ch) -> list[Hint]:
    """The chapter's hints; a missing or empty hints.md is one clear line."""
    try:
        hints = parse_hints(ch.hints.read_text(encoding="utf-8"))
    except OSError:
        raise LabError(f"chapter {ch.num} has no hints yet ({display_path(ch.hints)} is missing)",
                       EXIT_FAIL)
    if not hints:
        raise LabError(f"{display_path(ch.hints)} has no '## ' hint headings", EXIT_FAIL)
    return hints


def cmd_hint(args, root: Path = ROOT) -> int:
    """Shows the next hint not yet shown (remembered per chapter, and per step with
    --step K), or --all (of the chapter, or of step K), or --reset."""
    ch = chapter_of(args, root)
    state = load_state(root)
    if args.reset:
        state["hints_shown"][ch.name] = 0
        state.setdefault("step_hints_shown", {}).pop(ch.name, None)
        save_state(state, root)
        say(f"hints of chapter {ch.num} start over: ./lab hint {ch.num} shows the first one")
        return EXIT_OK
    hints = _load_hints(ch)
    goals = step_goals(ch)
    numbered = list(enumerate(hints, 1))
    if args.step is not None:
        numbered = [(i, h) for i, h in numbered if h.step == args.step]
        if not numbered:
            steps = sorted({h.step for h in hints if h.step is not None})
            raise LabError(f"chapter {ch.num} has no hint for step {args.step} "
                           f"(steps with hints: {', '.join(map(str, steps)) or 'none'})", EXIT_USAGE)
        counters = state.setdefault("step_hints_shown", {}).setdefault(ch.name, {})
        key, more = str(args.step), f"./lab hint {ch.num} --step {args.step}"
    else:
        counters, key, more = state["hints_shown"], ch.name, f"./lab hint {ch.num}"
    total = len(hints)
    step_flag = f" --step {args.step}" if args.step is not None else ""
    of_what = f"step {args.step} of chapter {ch.num}" if args.step is not None else f"chapter {ch.num}"
    if args.all:
        for i, h in numbered:
            show_hint(h, i, total, goals.get(h.step, ""))
        counters[key] = len(numbered)
        save_state(state, root)
        say(f"that is all of them. Compare with the solution: ./lab diff {ch.num}{step_flag}")
        return EXIT_OK
    shown = int(counters.get(key, 0))
    if shown >= len(numbered):
        say(f"no more hints for {of_what} (all {len(numbered)} shown). "
            f"Compare your code with the solution: ./lab diff {ch.num}{step_flag}")
        say(f"(./lab hint {ch.num} --reset starts the hints over)")
        return EXIT_OK
    i, hint = numbered[shown]
    show_hint(hint, i, total, goals.get(hint.step, ""))
    counters[key] = shown + 1
    save_state(state, root)
    left = len(numbered) - shown - 1
    if left:
        say(f"({left} more: {more})")
    else:
        say(f"that was the last hint of {of_what}. Still stuck? Compare with the solution: "
            f"./lab diff {ch.num}{step_flag}")
    return EXIT_OK
