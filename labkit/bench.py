"""./lab bench: a chapter's measurements as CSV files, then plotted."""

from __future__ import annotations

import subprocess
import time
from pathlib import Path

from .build import BuildFailed, build_target
from .chapters import chapter_of, require_exercise
from .core import EXIT_FAIL, EXIT_USAGE, ROOT, LabError
from .diagnostics import report_build_failure
from .plots import make_plots
from .run import program_target
from .terminal import describe_rc, display_path, exit_code_of, say
from .toolchain import setup


def files_written(folder: Path, since: float) -> list[Path]:
    """Files under folder changed since a moment: what this bench run wrote."""
    return sorted(p for p in folder.rglob("*") if p.is_file() and p.stat().st_mtime >= since - 1)


def cmd_bench(args, root: Path = ROOT) -> int:
    """Runs the chapter's measurements into CSV files (--out=DIR), then plots them."""
    ch = chapter_of(args, root)
    if not args.solution and not args.plot_only:
        require_exercise(ch)
    default = root / "bench" / (ch.name + ("-solution" if args.solution else ""))
    out_dir = Path(args.out).resolve() if args.out else default
    if out_dir.exists() and not out_dir.is_dir():
        raise LabError(f"--out {args.out or display_path(out_dir)} is a file, not a folder: name a folder "
                       "for the CSV and PNG files", EXIT_USAGE)
    start = time.time()
    if not args.plot_only:
        tc = setup(root, catch2_required=False)
        target, fallback = program_target(ch, args.solution)
        try:
            exe = build_target(tc, target, fallback)
        except BuildFailed as e:
            report_build_failure(e, None if args.solution else ch)
            return EXIT_FAIL
        created = not out_dir.exists()
        try:
            out_dir.mkdir(parents=True, exist_ok=True)
        except OSError as e:
            raise LabError(f"cannot create the folder {display_path(out_dir)} for --out: "
                           f"{e.strerror or e}", EXIT_USAGE) from e
        say(f"measuring: {display_path(exe)} --out={display_path(out_dir)} {' '.join(args.program_args)}")
        try:
            r = subprocess.run([str(exe), f"--out={out_dir}", *args.program_args], env=tc.env)
        except OSError as e:
            r = None
            error = LabError(f"cannot run {display_path(exe)}: {e.strerror}", EXIT_FAIL)
        if r is None or r.returncode != 0:
            if created and not any(out_dir.iterdir()):
                out_dir.rmdir()          # nothing measured (no GPU, a usage error): no empty folder left
            if r is None:
                raise error
            say(f"{target} ended with {describe_rc(r.returncode)}: no plots")
            return exit_code_of(r.returncode)
    elif not out_dir.is_dir() or not any(out_dir.glob("*.csv")):
        raise LabError(f"no CSV files in {display_path(out_dir)}: run ./lab bench {ch.num} first",
                       EXIT_USAGE)
    rc = make_plots(ch, out_dir, root)
    written = files_written(out_dir, start) if out_dir.is_dir() else []
    say(f"files written to {display_path(out_dir)}:" if written else "no files written")
    for p in written:
        say(f"  {display_path(p)}")
    return rc
