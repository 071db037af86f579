"""Plotting a chapter's CSV files with its plot.py: finding (or installing) matplotlib."""

from __future__ import annotations

import os
import socket
import sys
import shutil
from pathlib import Path
from typing import Optional

from .chapters import Chapter
from .core import EXIT_FAIL, EXIT_OK, ROOT, LabError
from .processes import run_quiet
from .terminal import describe_rc, display_path, paint, say
from .toolchain import no_install, pip_install


def python_with_matplotlib(root: Path = ROOT) -> Optional[str]:
    """The first Python that imports matplotlib: this one, the system's python3, then .venv's."""
    candidates = [sys.executable, shutil.which("python3"), str(root / ".venv" / "bin" / "python")]
    seen = set()
    for py in candidates:
        if not py or py in seen or not os.access(py, os.X_OK):
            continue
        seen.add(py)
        rc, _ = run_quiet([py, "-c", "import matplotlib"], timeout=120)
        if rc == 0:
            return py
    return None


def pypi_reachable() -> bool:
    """A quick look for the network: the GPU machine has none, and pip would hang there."""
    try:
        with socket.create_connection(("pypi.org", 443), timeout=3):
            return True
    except OSError:
        return False


def make_plots(ch: Chapter, out_dir: Path, root: Path = ROOT) -> int:
    """Runs the chapter's plot.py on the CSVs, finding (or installing) matplotlib first."""
    if not ch.plot_script.exists():
        say(f"chapter {ch.num} has no plot.py: CSV only")
        return EXIT_OK
    later = f"plots can be made later with ./lab bench {ch.num} --plot-only --out {display_path(out_dir)}"
    py = python_with_matplotlib(root)
    if py is None:
        if no_install() or not pypi_reachable():
            say(f"matplotlib is not installed and cannot be installed here: {later}")
            return EXIT_OK
        try:
            pip_install(root, ["matplotlib"], "for the plots")
        except LabError as e:
            say(f"{e}: {later}")
            return EXIT_OK
        py = python_with_matplotlib(root)
        if py is None:
            say(f"matplotlib still does not import: {later}")
            return EXIT_OK
    say(f"plotting with {display_path(ch.plot_script)}...")
    env = dict(os.environ, MPLBACKEND="Agg")
    rc, out = run_quiet([py, ch.plot_script, out_dir], env, root, timeout=600)
    if out.strip():
        say(out.rstrip())
    if rc != 0:
        say(paint(f"plot.py failed ({describe_rc(rc)})", "red"))
        return EXIT_FAIL
    return EXIT_OK
