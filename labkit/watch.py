"""./lab watch NN: re-check the chapter on every save of the learner's exercise.cu
(rustlings' watch mode). Polls the file's modification time: stdlib only, any editor."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Callable, Optional

from .chapters import chapter_of, require_exercise
from .check import check_chapter
from .core import EXIT_OK, ROOT
from .sass_tools import ensure_sass_tools
from .terminal import clear_screen, display_path, paint, say
from .toolchain import setup

POLL_S = 0.5


def modified_at(path: Path) -> Optional[int]:
    """The file's modification time in ns; None while it does not exist (an editor that
    saves by replacing the file)."""
    try:
        return path.stat().st_mtime_ns
    except OSError:
        return None


def watch_loop(path: Path, on_change: Callable[[], None], poll_s: float = POLL_S,
               sleep: Callable[[float], None] = time.sleep) -> None:
    """Calls on_change at once and after every change of path, until interrupted. The time
    is read before on_change, so a save during a check triggers the next one."""
    seen = object()
    while True:
        now = modified_at(path)
        if now is not None and now != seen:
            seen = now
            on_change()
        sleep(poll_s)


def cmd_watch(args, root: Path = ROOT) -> int:
    """Rebuilds and re-checks on every save; Ctrl-C stops it (exit 0)."""
    ch = chapter_of(args, root)
    require_exercise(ch)
    tc = setup(root, catch2_required=True)
    ensure_sass_tools(tc, root, "for the SASS checks of your kernels", note_missing=False)

    def recheck() -> None:
        clear_screen()
        say(paint(f"watching {display_path(ch.exercise)}: every save re-checks it (Ctrl-C stops)", "dim"))
        check_chapter(ch, tc, root)
        say()
        say(paint("waiting for your next save...", "dim"))

    try:
        watch_loop(ch.exercise, recheck)
    except KeyboardInterrupt:
        say()
        say("stopped watching.")
    return EXIT_OK
