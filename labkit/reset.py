"""./lab reset: the starter back from git, never without a backup of the learner's file."""

from __future__ import annotations

import datetime as _dt
import shutil
import subprocess
from pathlib import Path

from .chapters import Chapter, chapter_of
from .core import EXIT_OK, EXIT_USAGE, ROOT, LabError
from .state import load_state, save_state, state_dir
from .terminal import display_path, say


def git_starter(ch: Chapter) -> bytes:
    """The starter exercise.cu as committed (HEAD), straight from git."""
    if shutil.which("git") is None:
        raise LabError("git is not installed, so the starter cannot be restored", EXIT_USAGE)
    spec = f"HEAD:{ch.exercise_rel}"
    r = subprocess.run(["git", "-C", str(ch.root), "show", spec],
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    if r.returncode != 0:
        why = (r.stderr.decode(errors="replace").strip().splitlines() or ["no output"])[0]
        raise LabError(f"git cannot give the starter ({spec}): {why}", EXIT_USAGE)
    return r.stdout


def backup_exercise(ch: Chapter, root: Path = ROOT) -> Path:
    """Copies the learner's file to .lab/backups/ with a timestamp before anything replaces it."""
    folder = state_dir(root) / "backups"
    folder.mkdir(parents=True, exist_ok=True)
    stamp = _dt.datetime.now().strftime("%Y%m%d-%H%M%S")
    target = folder / f"{ch.name}-exercise.cu.{stamp}"
    n = 1
    while target.exists():   # two resets in one second must not overwrite the first backup
        target = folder / f"{ch.name}-exercise.cu.{stamp}-{n}"
        n += 1
    shutil.copy2(ch.exercise, target)
    return target


def cmd_reset(args, root: Path = ROOT) -> int:
    """Restores the starter from git, always keeping the learner's current file as a backup."""
    ch = chapter_of(args, root)
    starter = git_starter(ch)
    if ch.exercise.exists():
        if ch.exercise.read_bytes() == starter:
            say(f"{ch.exercise_rel} is already the starter: nothing to do")
            return EXIT_OK
        backup = backup_exercise(ch, root)
        say(f"your file was saved as {display_path(backup)}")
    ch.exercise.parent.mkdir(parents=True, exist_ok=True)
    ch.exercise.write_bytes(starter)
    state = load_state(root)
    if state["chapters"].pop(ch.name, None) is not None:
        save_state(state, root)
    say(f"{ch.exercise_rel} is the starter again (chapter {ch.num}: not started)")
    return EXIT_OK
