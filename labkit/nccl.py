"""NCCL for chapter 10's comparison: found where Meson looks for it (common/meson.build: the
system, the toolkit, or the nvidia-nccl-cu13 wheel in .venv or in the system's Python), and
installed into .venv with pip where it is missing and worth its 200 MB: on a machine with two
GPUs or more (the only one where chapter 10 runs), or where CML_WITH_NCCL=1 asks for it (CI,
to compile the NCCL path). Best effort: without NCCL chapter 10 builds and says what it
leaves out."""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path

from .core import ROOT, LabError
from .plots import pypi_reachable
from .processes import run_quiet
from .terminal import say
from .toolchain import Toolchain, no_install, pip_install

NCCL_WHEEL = "nvidia-nccl-cu13"
PROBE = ("import importlib.util as u; s = u.find_spec('nvidia.nccl'); "
         "print(list(s.submodule_search_locations)[0] if s and s.submodule_search_locations else '')")


def nccl_header_dirs(root: Path = ROOT) -> list:
    """Where nccl.h may be, in the order Meson looks (system and toolkit, then the wheels)."""
    dirs = [Path("/usr/include"), Path("/usr/local/cuda/include")]
    for python in [root / ".venv" / "bin" / "python3", shutil.which("python3")]:
        if python and Path(python).exists():
            rc, out = run_quiet([str(python), "-c", PROBE], timeout=60)
            if rc == 0 and out.strip():
                dirs.append(Path(out.strip().splitlines()[-1]) / "include")
    return dirs


def have_nccl(root: Path = ROOT) -> bool:
    return any((d / "nccl.h").exists() for d in nccl_header_dirs(root))


def gpu_count() -> int:
    smi = shutil.which("nvidia-smi")
    if not smi:
        return 0
    rc, out = run_quiet([smi, "-L"], timeout=60)
    return sum(1 for line in out.splitlines() if line.startswith("GPU ")) if rc == 0 else 0


def wanted() -> bool:
    return os.environ.get("CML_WITH_NCCL") == "1" or gpu_count() >= 2


def ensure_nccl(tc: Toolchain, root: Path = ROOT) -> None:
    """Installs the NCCL wheel into .venv where it is missing and wanted; a note otherwise."""
    if have_nccl(root) or not wanted():
        return
    if no_install() or not pypi_reachable():
        say(f"note: NCCL not found: chapter 10 will not compare its ring with NCCL (pip install {NCCL_WHEEL} "
            "into .venv, then ./lab setup)", sys.stderr)
        return
    try:
        pip_install(root, [NCCL_WHEEL], "for chapter 10's comparison with NCCL (about 200 MB)")
    except LabError as e:
        say(f"note: {e}: chapter 10 will not compare its ring with NCCL", sys.stderr)
