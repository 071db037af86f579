"""Building only what a command needs, quietly (the log goes to .lab/), and saying when a
build will be long: only the very first one."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Optional

from .core import EXIT_FAIL, LabError
from .processes import run_quiet
from .state import state_dir
from .terminal import display_path, progress
from .toolchain import Toolchain


class BuildFailed(LabError):
    """A compile or link error; carries the log so the caller can show the right lines."""

    def __init__(self, target: str, output: str, log: Path):
        super().__init__(f"building {target} failed", EXIT_FAIL)
        self.target, self.output, self.log = target, output, log


def meson_targets(build: Path) -> Optional[dict]:
    """Target name -> its first output file, from Meson's introspection (what `meson compile
    NAME` itself uses); None when build/ has no introspection data."""
    try:
        data = json.loads((build / "meson-info" / "intro-targets.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return {t.get("name"): Path((t.get("filename") or [""])[0]) for t in data if isinstance(t, dict)}


def meson_tests(build: Path) -> list[dict]:
    """The tests Meson knows (name, cmd, suite...), from its introspection; [] without it."""
    try:
        data = json.loads((build / "meson-info" / "intro-tests.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return []
    return [t for t in data if isinstance(t, dict)]


def target_output(build: Path, target: str, fallback: str) -> Path:
    """Where a target's file is, so a target moved to another folder needs no change here."""
    targets = meson_targets(build) or {}
    found = targets.get(target)
    return found if found and str(found) else build / fallback


def has_target(build: Path, target: str) -> bool:
    """Whether build/ knows the target (it may not, e.g. tests configured without Catch2)."""
    targets = meson_targets(build)
    if targets is not None:
        return target in targets
    try:
        text = (build / "build.ninja").read_text(encoding="utf-8", errors="replace")
    except OSError:
        return False
    return re.search(rf"(?m)^build (?:\S+/)?{re.escape(target)}:", text) is not None


def ensure_target(tc: Toolchain, target: str) -> None:
    """Reconfigures once when build/ does not know a target, e.g. Catch2 was installed after
    build/ was configured; then says clearly what is missing."""
    if has_target(tc.build, target):
        return
    progress(f"build/ has no target {target} yet: reconfiguring...")
    rc, out = run_quiet([tc.meson, "setup", "--reconfigure", tc.build], tc.env, tc.root)
    if rc != 0 or not has_target(tc.build, target):
        hint = " (are Catch2 and pkg-config installed? ./lab doctor)" if target.startswith("test") else ""
        raise LabError(f"build/ has no target {target}{hint}", EXIT_FAIL)


def is_first_build(build: Path) -> bool:
    """Nothing has been built in build/ yet: Ninja's log of built outputs is missing or
    empty. (A failed link after a good build is not a first build: most is built.)"""
    try:
        lines = (build / ".ninja_log").read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError:
        return True
    return not any(l and not l.startswith("#") for l in lines)


def build_targets(tc: Toolchain, targets: list, log_name: str) -> None:
    """Builds targets quietly in one Ninja run (the log goes to .lab/log_name)."""
    for t in targets:
        ensure_target(tc, t)
    first = " (the first build takes a few minutes)" if is_first_build(tc.build) else ""
    progress(f"building {', '.join(targets)}{first}...")
    rc, out = run_quiet([tc.meson, "compile", "-C", tc.build, *targets], tc.env, tc.root)
    log = state_dir(tc.root) / log_name
    log.parent.mkdir(parents=True, exist_ok=True)
    log.write_text(out, encoding="utf-8")
    if rc != 0:
        raise BuildFailed(", ".join(targets), out, log)


def build_target(tc: Toolchain, target: str, fallback: str) -> Path:
    """Builds one target quietly, returning its file."""
    build_targets(tc, [target], f"build-{target}.log")
    out_path = target_output(tc.build, target, fallback)
    if not out_path.exists():
        raise LabError(f"{target} built, but {display_path(out_path)} is not there", EXIT_FAIL)
    return out_path
