"""The learner's progress (.lab/state.json): each chapter's last verdict and the hints seen."""

from __future__ import annotations

import datetime as _dt
import json
import os
import re
import sys
from pathlib import Path
from typing import Optional

from .chapters import Chapter
from .core import ROOT
from .terminal import display_path, say


def state_dir(root: Path = ROOT) -> Path:
    """Where lab keeps its state, logs and backups: .lab/ (git-ignored), or
    $CML_LAB_STATE_DIR so tests never touch a learner's real progress."""
    override = os.environ.get("CML_LAB_STATE_DIR")
    return Path(override).resolve() if override else root / ".lab"


def load_state(root: Path = ROOT) -> dict:
    """The state file, or a fresh one: an unreadable file must not lock the learner out."""
    path = state_dir(root) / "state.json"
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        if not isinstance(data, dict):
            raise ValueError("not an object")
    except FileNotFoundError:
        data = {}
    except (OSError, ValueError) as e:
        say(f"lab: ignoring unreadable {display_path(path)} ({e})", sys.stderr)
        data = {}
    data.setdefault("version", 1)
    data.setdefault("chapters", {})
    data.setdefault("hints_shown", {})
    return data


def write_atomically(path: Path, text: str) -> None:
    """Writes `text` whole or not at all (temp file + rename): an interrupted lab never leaves
    half a file."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(text, encoding="utf-8")
    os.replace(tmp, path)


def save_state(state: dict, root: Path = ROOT) -> None:
    write_atomically(state_dir(root) / "state.json", json.dumps(state, indent=2, sort_keys=True) + "\n")


def remember(root: Path, ch: Chapter, entry: dict) -> None:
    """Stores a chapter's last check verdict, with when it was taken."""
    state = load_state(root)
    state["chapters"][ch.name] = dict(entry, checked=_dt.datetime.now().isoformat(timespec="seconds"))
    save_state(state, root)


_NEEDS_GPU = re.compile(r"^needs a GPU: (?P<why>.*?)"
                        r"(?:; the compiled code of step (?P<step>\d+) fails its check)?$", re.S)


def needs_gpu(why: str, failed_step: Optional[int] = None) -> str:
    """The reason a check without a GPU remembers (gpu_reason reads it back)."""
    return f"needs a GPU: {why}" + ("" if failed_step is None else
                                    f"; the compiled code of step {failed_step} fails its check")


def gpu_reason(entry: Optional[dict]) -> str:
    """Why a chapter's last check had no GPU to run on ('' when that is not why it skipped)."""
    m = _NEEDS_GPU.match(str((entry or {}).get("reason") or "")) if (entry or {}).get("state") == "skipped" else None
    return m.group("why") if m else ""


def describe_state(entry: Optional[dict], gpu_said: bool = False) -> tuple[str, str]:
    """A chapter's state as the table shows it, and the colour it gets. gpu_said: the table
    says once why there is no GPU, so a row says only 'no GPU'."""
    if not entry:
        return "not started", "dim"
    st = entry.get("state")
    if st == "passed":
        skipped = entry.get("skipped_tests", 0)
        note = f" ({skipped} test{'s' if skipped != 1 else ''} skipped)" if skipped else ""
        return "passed" + note, "green"
    if st == "failing":
        step = entry.get("step")
        text = f"failing at step {step}" if step else "failing"
        if not step and entry.get("reason"):
            text += f": {entry['reason']}"
        if entry.get("steps_total"):
            text += f" ({entry.get('steps_passed', 0)} of {entry['steps_total']} steps passed)"
        return text, "red"
    if st == "skipped":
        m = _NEEDS_GPU.match(str(entry.get("reason") or ""))
        if gpu_said and m:
            return "skipped: no GPU" + (f"; step {m.group('step')}'s SASS fails" if m.group("step") else ""), "yellow"
        return f"skipped: {entry.get('reason') or 'no reason given'}", "yellow"
    return str(st), "dim"
