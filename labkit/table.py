"""./lab (the chapter table, also ./lab list) and ./lab next."""

from __future__ import annotations

from pathlib import Path

from .chapters import load_chapters
from .core import EXIT_OK, ROOT
from .state import describe_state, gpu_reason, load_state
from .terminal import display_path, paint, say, terminal_width


def short_title(title: str) -> str:
    """A chapter's title without what follows its colon ('Shared memory' of 'Shared memory:
    banks, conflicts, ...'): what the table shows when the whole titles do not fit."""
    return title.split(": ", 1)[0]


def fit(text: str, width: int) -> str:
    """text cut to width columns, '...' saying it was cut."""
    return text if len(text) <= width else text[:max(width - 3, 0)].rstrip() + "..."


def table_rows(chapters: list, state: dict, width: int) -> tuple[list, list]:
    """The table's lines fitted to width columns (the whole titles when they fit, else the
    short ones, cut if need be; the state column after them), and the distinct reasons why
    chapters had no GPU, said once under the table rather than in every row."""
    rows, reasons = [], []
    for ch in chapters:
        entry = state["chapters"].get(ch.name)
        text, colour = describe_state(entry, gpu_said=True)
        if gpu_reason(entry) and gpu_reason(entry) not in reasons:
            reasons.append(gpu_reason(entry))
        if not ch.folder.is_dir():
            text, colour = "not written yet", "dim"
        elif not ch.exercise.is_file():
            text, colour = f"exercise.cu is missing: ./lab reset {ch.num} restores the starter", "red"
        rows.append((ch, text, colour))
    indent = 8                                   # "  NN  " before the title, 2 spaces after it
    states = max((len(text) for _, text, _ in rows), default=0)
    titles = [ch.title for ch in chapters]
    if max(map(len, titles), default=0) + indent + states > width:
        titles = [short_title(t) for t in titles]
    title_width = max(min(max(map(len, titles), default=0), width - indent - states), 12)
    lines = [f"  {ch.num}  {fit(title, title_width).ljust(title_width)}  "
             f"{paint(fit(text, max(width - indent - title_width, 10)), colour)}"
             for (ch, text, colour), title in zip(rows, titles)]
    return lines, reasons


def cmd_table(args, root: Path = ROOT) -> int:
    """The chapter table: what exists, and where the learner stands in each chapter; it fits
    the terminal (COLUMNS, else the terminal's width, else 80 columns)."""
    chapters = load_chapters(root)
    state = load_state(root)
    say(paint("CUDA Memory Lab", "bold"))
    say()
    lines, reasons = table_rows(chapters, state, terminal_width())
    for line in lines:
        say(line)
    for why in reasons:
        say(paint(f"no GPU here: {why}", "yellow"))
    passed = sum(1 for ch in chapters if (state["chapters"].get(ch.name) or {}).get("state") == "passed")
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
