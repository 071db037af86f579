"""./lab run: build the learner's (or the reference) program and run it."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from .build import BuildFailed, build_target
from .chapters import Chapter, chapter_of, require_exercise
from .core import EXIT_FAIL, ROOT, LabError
from .diagnostics import report_build_failure
from .sass_tools import ensure_sass_tools
from .terminal import display_path, exit_code_of, progress_to_stderr
from .toolchain import setup


def split_passthrough(argv: list) -> tuple[list, list]:
    """Splits at the first `--`: lab's own arguments, then the program's."""
    if "--" in argv:
        i = argv.index("--")
        return argv[:i], argv[i + 1:]
    return argv, []


def program_target(ch: Chapter, solution: bool) -> tuple[str, str]:
    """The Meson target of a chapter's program and its usual path under build/."""
    name = f"ch{ch.num}" + ("_solution" if solution else "")
    return name, f"chapters/{name}"


def cmd_run(args, root: Path = ROOT) -> int:
    """Builds the learner's (or the reference) program and runs it; its exit code is ours.
    lab's own lines go to stderr so the program's stdout can be piped (--csv)."""
    ch = chapter_of(args, root)
    if not args.solution:
        require_exercise(ch)
    progress_to_stderr()
    tc = setup(root, catch2_required=False)
    # A new learner's first command: what ./lab check needs to check their compiled code
    # (with a GPU or without) comes with the rest of the set-up, not at their first check.
    ensure_sass_tools(tc, root, "for ./lab check's SASS checks", note_missing=False)
    target, fallback = program_target(ch, args.solution)
    try:
        exe = build_target(tc, target, fallback)
    except BuildFailed as e:
        report_build_failure(e, None if args.solution else ch, sys.stderr)
        return EXIT_FAIL
    try:
        r = subprocess.run([str(exe), *args.program_args], env=tc.env)
    except OSError as e:
        raise LabError(f"cannot run {display_path(exe)}: {e.strerror}", EXIT_FAIL) from e
    return exit_code_of(r.returncode)
