"""./lab (the chapter table, also ./lab list) and ./lab next."""

from __future__ import annotations

from pathlib import Path

from .chapters import load_chapters
from .core import EXIT_OK, ROOT
from .state import describe_state, load_state
from .terminal import display_path, paint, say


def cmd_table(args, root: Path = ROOT) -> int:
    """The chapter table: what exists, and where the learner stands in each chapter."""
    chapters = load_chapters(root)
    state = load_state(root)
    say(paint("CUDA Memory Lab", "bold"))
    say()
    width = max((len(c.title) for c in chapters), default=10)
    passed = 0
    for ch in chapters:
        entry = state["chapters"].get(ch.name)
        text, colour = describe_state(entry)
        if entry and entry.get("state") == "passed":
            passed += 1
        if not ch.folder.is_dir():
            text, colour = "not written yet", "dim"
        elif not ch.exercise.is_file():
            text, colour = f"exercise.cu is missing: ./lab reset {ch.num} restores the starter", "red"
        say(f"  {ch.num}  {ch.title.ljust(width)}  {paint(text, colour)}")
    say()
    say(f"{passed} of {len(chapters)} chapters passed")
    if chapters and passed < len(chapters):
        say("next: ./lab next    all commands: ./lab --help")
    return EXIT_OK


def cmd_next(args, root: Path = ROOT) -> int:
    """Points at the first chapter not passed yet, with the exact commands to type."""
    chapters = load_chapters(root)
    state = load_state(root)
    for ch in chapters:
        entry = state["chapters"].get(ch.name)
        if entry and entry.get("state") == "passed":
            continue
        text, colour = describe_state(entry)
        say(f"next: chapter {ch.num}  {ch.title}  ({paint(text, colour)})")
        say(f"  read    {display_path(ch.readme)}")
        say(f"  edit    {display_path(ch.exercise)}   (the TODOs, in order)")
        say(f"  run     ./lab run {ch.num}")
        say(f"  check   ./lab check {ch.num}    (or ./lab watch {ch.num}: re-checks on every save)")
        say(f"  stuck?  ./lab hint {ch.num}")
        return EXIT_OK
    say(f"all {len(chapters)} chapters passed. ./lab bench NN measures a chapter on this GPU.")
    return EXIT_OK
