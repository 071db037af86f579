"""What lab prints and how: colour only on a terminal (NO_COLOR and TERM=dumb respected),
lines flushed at once so they keep their order with a child's output, paths and ./lab
commands as the learner types them from the folder they are in; a closed standard output
or one whose encoding cannot print a character is one line or a '?', never a traceback."""

import os
import re
import shutil
import signal
import sys
from pathlib import Path

from .core import EXIT_USAGE, ROOT, LabError

_CODES = {"red": "31", "green": "32", "yellow": "33", "blue": "34", "cyan": "36",
          "bold": "1", "dim": "2"}


def use_colour(stream=None) -> bool:
    """Colour only on a terminal, and never when NO_COLOR is set (no-color.org) or the
    terminal says it has none (TERM=dumb)."""
    stream = stream or sys.stdout
    if os.environ.get("NO_COLOR") or os.environ.get("TERM") == "dumb":
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


_LAB_COMMAND = re.compile(r"(?<![\w/.])\./lab(?=\s|$|[)`'\"])")


def lab_command() -> str:
    """How the learner runs lab from the folder they are in: ./lab at the checkout's root,
    ../../lab from a chapter's folder."""
    try:
        rel = os.path.relpath(ROOT / "lab", Path.cwd())
    except ValueError:
        return str(ROOT / "lab")
    return rel if "/" in rel else "./" + rel


def write(text: str, stream=None) -> None:
    """Writes and flushes at once (lab's lines and child output keep their order). A
    stream lab was started without (`./lab list >&-`: Python makes sys.stdout None) is a
    usage error, one line on stderr, not a traceback; main() makes the standard streams
    replace what their encoding cannot print (PYTHONIOENCODING=ascii) instead of dying."""
    stream = stream or sys.stdout
    if stream is None:
        raise LabError("standard output is closed, so there is nowhere to print "
                       "(run it without >&-, or send the output to /dev/null)", EXIT_USAGE)
    stream.write(text)
    stream.flush()


def say(text: str = "", stream=None) -> None:
    """Prints a line and flushes at once, so lab's lines and child output keep their order;
    every `./lab` in the text is the command as typed from the current folder."""
    launcher = lab_command()
    if launcher != "./lab":
        text = _LAB_COMMAND.sub(launcher, text)
    write(text + "\n", stream)


_progress = ["stdout"]


def progress(text: str) -> None:
    """Lab's own progress lines (installing, configuring, building, checks as they run)."""
    say(text, sys.stderr if _progress[0] == "stderr" else sys.stdout)


def progress_to_stderr() -> None:
    """`run` sends progress to stderr, so the program's stdout stays clean for pipes
    (--csv > file)."""
    _progress[0] = "stderr"


def is_terminal(stream) -> bool:
    """Whether a stream is an interactive terminal (a question can be answered there)."""
    try:
        return stream.isatty()
    except (AttributeError, ValueError):
        return False


def terminal_width() -> int:
    """The columns to fit: COLUMNS when set, else the terminal's width, else 80."""
    return shutil.get_terminal_size((80, 24)).columns


def clear_screen() -> None:
    """Clears a terminal (watch mode); a pipe, a file or a terminal that says it has no
    screen control (TERM=dumb: an editor's shell buffer) gets no escape codes."""
    if is_terminal(sys.stdout) and os.environ.get("TERM") != "dumb":
        write("\033[2J\033[H")


def display_path(path: Path) -> str:
    """A path as the learner can type it from the current folder: relative to it when the
    path is in the checkout and the learner too (../../.lab/x.log from a chapter's folder),
    else as it is."""
    path = Path(path)
    try:
        resolved, cwd = path.resolve(), Path.cwd().resolve()
    except OSError:
        return str(path)
    inside = [p for p in (resolved, cwd) if p == ROOT or ROOT in p.parents]
    if len(inside) == 2:
        return os.path.relpath(resolved, cwd)
    try:
        return str(resolved.relative_to(cwd))
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


def guard_standard_streams() -> None:
    """What main() does first: a character the output's encoding cannot print (an em dash
    under PYTHONIOENCODING=ascii) becomes '?' instead of a UnicodeEncodeError, and a closed
    stderr (`2>&-`) swallows lab's notes instead of failing on the first one. A closed
    stdout stays None: write() reports it."""
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.reconfigure(errors="replace")
        except (AttributeError, ValueError, OSError):
            pass                    # None, or not a text file (a test's StringIO)
    if sys.stderr is None:
        sys.stderr = open(os.devnull, "w")
