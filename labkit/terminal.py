"""What lab prints and how: colour only on a terminal (NO_COLOR respected), lines flushed
at once so they keep their order with a child's output, paths as the learner types them."""

import os
import signal
import sys
from pathlib import Path

from .core import ROOT

_CODES = {"red": "31", "green": "32", "yellow": "33", "blue": "34", "cyan": "36",
          "bold": "1", "dim": "2"}


def use_colour(stream=None) -> bool:
    """Colour only on a terminal, and never when NO_COLOR is set (no-color.org)."""
    stream = stream or sys.stdout
    if os.environ.get("NO_COLOR"):
        return False
    try:
        return stream.isatty()
    except (AttributeError, ValueError):
        return False


def paint(text: str, colour: str, stream=None) -> str:
    """Wraps text in an ANSI colour when colour is allowed on that stream."""
    if not use_colour(stream):
        return text
    return f"\033[{_CODES[colour]}m{text}\033[0m"


def say(text: str = "", stream=None) -> None:
    """Prints and flushes at once, so lab's lines and child output keep their order."""
    stream = stream or sys.stdout
    stream.write(text + "\n")
    stream.flush()


_progress = [sys.stdout]


def progress(text: str) -> None:
    """Lab's own progress lines (installing, configuring, building)."""
    say(text, _progress[0])


def progress_to_stderr() -> None:
    """`run` sends progress to stderr, so the program's stdout stays clean for pipes
    (--csv > file)."""
    _progress[0] = sys.stderr


def is_terminal(stream) -> bool:
    """Whether a stream is an interactive terminal (a question can be answered there)."""
    try:
        return stream.isatty()
    except (AttributeError, ValueError):
        return False


def clear_screen() -> None:
    """Clears a terminal (watch mode); a pipe or a file gets no escape codes."""
    if is_terminal(sys.stdout):
        sys.stdout.write("\033[2J\033[H")
        sys.stdout.flush()


def display_path(path: Path) -> str:
    """A path as the learner can type it: relative to the current folder when inside it."""
    path = Path(path)
    try:
        return str(path.resolve().relative_to(Path.cwd().resolve()))
    except (ValueError, OSError):
        pass
    try:
        return str(path.resolve().relative_to(ROOT))
    except ValueError:
        return str(path)


def exit_code_of(rc: int) -> int:
    """A child's return code as a shell would report it (signals as 128+N)."""
    return 128 - rc if rc < 0 else rc


def describe_rc(rc: int) -> str:
    """'exit status 3' or 'killed by signal SIGSEGV': what went wrong with a child."""
    if rc < 0:
        try:
            return f"killed by signal {signal.Signals(-rc).name}"
        except ValueError:
            return f"killed by signal {-rc}"
    return f"exit status {rc}"


def unique(items: list) -> list:
    """Items in order, each once."""
    seen, out = set(), []
    for x in items:
        if x not in seen:
            seen.add(x)
            out.append(x)
    return out


def plural(n: int, word: str) -> str:
    """'1 step', '3 steps'."""
    return f"{n} {word}{'' if n == 1 else 's'}"
