"""./lab test: the project's self-test. It builds everything, runs the cpu and solutions
suites (or the solutions under a compute-sanitizer tool), says why each skipped test
skipped, and always ends with the line `N passed, N failed, N skipped` (CI reads it)."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from typing import Optional, Sequence

from .chapters import load_chapters, resolve_chapter
from .core import EXIT_FAIL, EXIT_OK, EXIT_SKIP, ROOT, LabError
from .diagnostics import extract_compile_errors
from .junit import skip_lines
from .processes import find_cuda_tool, last_lines, stream_command
from .sass_tools import ensure_sass_tools
from .state import state_dir
from .terminal import describe_rc, display_path, say
from .toolchain import Toolchain, setup

SUMMARY_KEYS = ("Ok", "Expected Fail", "Fail", "Unexpected Pass", "Skipped", "Timeout")
FAILED_TO_START = "0 passed, 1 failed, 0 skipped"
SANITIZER_TOOLS = ("memcheck", "racecheck", "synccheck")


def parse_meson_summary(text: str) -> Optional[dict]:
    """The counts of `meson test`'s closing summary block (the last one, should a test's own
    output look alike), or None when there is none."""
    lines = text.splitlines()
    start = None
    for i, line in enumerate(lines):
        if re.match(r"^\s*Ok:\s+\d+\s*$", line):
            start = i
    if start is None:
        return None
    counts = {}
    for line in lines[start:start + 12]:
        m = re.match(r"^\s*(Ok|Expected Fail|Fail|Unexpected Pass|Skipped|Timeout):\s+(\d+)\s*$", line)
        if m:
            counts[m.group(1)] = int(m.group(2))
    return {k: counts.get(k, 0) for k in SUMMARY_KEYS}


def totals(counts: dict) -> tuple[int, int, int]:
    """(passed, failed, skipped): passed = Ok + Expected Fail; failed = Fail + Unexpected
    Pass + Timeout; a skip is its own column, never a pass."""
    passed = counts.get("Ok", 0) + counts.get("Expected Fail", 0)
    failed = counts.get("Fail", 0) + counts.get("Unexpected Pass", 0) + counts.get("Timeout", 0)
    return passed, failed, counts.get("Skipped", 0)


def final_line(counts: dict) -> str:
    """The self-test's last line, alone: `N passed, N failed, N skipped`."""
    return "{} passed, {} failed, {} skipped".format(*totals(counts))


def meson_test_command(tc: Toolchain, setup_name: Optional[str], maintainer: bool,
                       chapters: Sequence[str] = (), repeat: int = 1) -> list:
    """`meson test` with the suites of the self-test: cpu + solutions (+ starters for the
    maintainer); a sanitizer setup runs the solutions only. Given chapter numbers, only
    those chapters' solutions (and starters for the maintainer) run; `repeat` runs every
    test that many times."""
    cmd = [tc.meson, "test", "-C", tc.build, "--print-errorlogs",
           "--num-processes", str(os.cpu_count() or 1)]
    if repeat > 1:
        cmd += ["--repeat", str(repeat)]
    if setup_name:
        cmd += ["--setup", setup_name]
    if chapters:
        names = [f"ch{num} solution" for num in chapters]
        if maintainer and not setup_name:
            names += [f"ch{num} starter fails" for num in chapters]
        return cmd + names
    if setup_name:
        return cmd + ["--suite", "solutions"]
    cmd += ["--suite", "cpu", "--suite", "solutions"]
    if maintainer:
        cmd += ["--suite", "starters"]
    return cmd


def require_sanitizer(tool: Optional[str]) -> None:
    """`--setup memcheck` runs the tests under compute-sanitizer: without it, one line and
    a skip (77), before anything is configured or built."""
    if tool and find_cuda_tool("compute-sanitizer") is None:
        raise LabError(f"compute-sanitizer not found (not on PATH, not in /usr/local/cuda/bin): "
                       f"./lab test --setup {tool} needs it; it comes with the CUDA Toolkit",
                       EXIT_SKIP)


def skip_reasons(log: Path) -> dict:
    """Reason -> the skipped tests that gave it, from Meson's JSON test log (each test's
    `SKIP: why` line; 'no reason printed' when a test gave none)."""
    reasons: dict = {}
    try:
        lines = log.read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError:
        return reasons
    for line in lines:
        try:
            entry = json.loads(line)
        except ValueError:
            continue
        if not isinstance(entry, dict) or entry.get("result") != "SKIP":
            continue
        name = str(entry.get("name", "?")).split(" - ", 1)[-1].split(":", 1)[-1]
        said = skip_lines(f"{entry.get('stdout') or ''}\n{entry.get('stderr') or ''}")
        reasons.setdefault(said[0] if said else "no reason printed", []).append(name)
    return reasons


def print_skip_reasons(build: Path, setup_name: Optional[str]) -> None:
    """Why the skipped tests skipped, one line per reason (Meson shows only 'exit status 77')."""
    log = build / "meson-logs" / (f"testlog-{setup_name}.json" if setup_name else "testlog.json")
    reasons = skip_reasons(log)
    if reasons:
        say("skipped, and why:")
        for reason, names in reasons.items():
            say(f"  {', '.join(names)}: {reason}")


def cmd_test(args, root: Path = ROOT) -> int:
    """Builds everything and runs the self-test suites; the last line printed is always
    `N passed, N failed, N skipped`, except for a missing sanitizer (one line, 77)."""
    require_sanitizer(args.setup)
    chapters = [resolve_chapter(word, load_chapters(root)).num for word in args.chapters]  # a bad NN: before building
    try:
        tc = setup(root, catch2_required=True, show_output=True)
        ensure_sass_tools(tc, root, "for the SASS checks of the solutions")
    except LabError as e:
        say(f"lab: {e}")
        say(FAILED_TO_START)
        return e.code
    logs = state_dir(root)
    say("building everything: all chapters' starters and solutions, all tests...")
    rc, out = stream_command([tc.meson, "compile", "-C", tc.build], tc.env, root, logs / "build-all.log")
    if rc != 0:
        say()
        say("the build failed:")
        for line in extract_compile_errors(out):
            say("  " + line)
        say(f"full log: {display_path(logs / 'build-all.log')}")
        say(FAILED_TO_START)
        return EXIT_FAIL
    cmd = meson_test_command(tc, args.setup, args.maintainer, chapters, args.repeat)
    say("running: " + " ".join(str(c) for c in cmd[1:]))
    rc, out = stream_command(cmd, tc.env, root, logs / "test.log")
    counts = parse_meson_summary(out)
    if counts is None:
        say(f"meson test gave no summary ({describe_rc(rc)}): {last_lines(out)}")
        say(FAILED_TO_START)
        return EXIT_FAIL
    passed, failed, skipped = totals(counts)
    if rc != 0 and failed == 0:
        say(f"meson test ended with {describe_rc(rc)} although no test failed")
        failed = 1
    if skipped:
        print_skip_reasons(tc.build, args.setup)
    say(f"{passed} passed, {failed} failed, {skipped} skipped")
    return EXIT_FAIL if failed else EXIT_OK
