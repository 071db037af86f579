"""cuobjdump and nvdisasm, which the SASS checks need (no GPU needed): where they are, and
installing them from NVIDIA's pip packages into .venv when the toolkit lacks them (the
toolkit's own runfile and conda installs often have them; a minimal one has not). One
function for every command that runs SASS checks: ./lab test (the solutions'), ./lab check
and ./lab run (the learner's: the first command a new learner types installs them, so the
first check checks); ./lab doctor reports what find_sass_tools finds."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Optional

from .core import CUDA_DEFAULT_BIN, ROOT, LabError
from .plots import pypi_reachable
from .terminal import say
from .toolchain import Toolchain, no_install, pip_install

SASS_TOOLS = ["nvidia-cuda-cuobjdump==13.2.51", "nvidia-cuda-nvdisasm==13.2.51"]   # 13.2 reads 13.0's binaries
INSTALL_COMMAND = f".venv/bin/python -m pip install {' '.join(SASS_TOOLS)}"


def sass_tool_dirs(env: dict, root: Path = ROOT) -> list[Path]:
    """Where the SASS checks look for cuobjdump with nvdisasm beside it, in their order
    (common/src/sass.cpp, find_cuobjdump): CML_CUOBJDUMP's folder, PATH, $CUDA_HOME/bin,
    the toolkit's bin/, then the pip packages in .venv."""
    dirs = [Path(env["CML_CUOBJDUMP"]).parent] if env.get("CML_CUOBJDUMP") else []
    dirs += [Path(d) for d in env.get("PATH", "").split(os.pathsep) if d]
    if env.get("CUDA_HOME"):
        dirs.append(Path(env["CUDA_HOME"]) / "bin")
    dirs.append(CUDA_DEFAULT_BIN)
    dirs += sorted((root / ".venv" / "lib").glob("python*/site-packages/nvidia/cu13/bin"))
    return dirs


def find_sass_tools(env: Optional[dict] = None, root: Path = ROOT) -> Optional[Path]:
    """The folder that holds both cuobjdump and nvdisasm, as the SASS checks will find it;
    None when there is none."""
    env = os.environ if env is None else env
    return next((d for d in sass_tool_dirs(env, root)
                 if (d / "cuobjdump").is_file() and (d / "nvdisasm").is_file()), None)


def ensure_sass_tools(tc: Toolchain, root: Path = ROOT, why: str = "for the SASS checks",
                      note_missing: bool = True) -> None:
    """cuobjdump and nvdisasm for the SASS checks: the toolkit's when it has them, else
    NVIDIA's pip packages installed into .venv. Best effort: without them the SASS checks
    skip and say why, so a miss is at most a note (note_missing=False: not even that, where
    the checks' own lines will say it), and a failed install one line."""
    if find_sass_tools(tc.env, root) is not None:
        return
    if no_install() or not pypi_reachable():
        if note_missing:
            say(f"note: cuobjdump/nvdisasm not found: the SASS checks will skip ({INSTALL_COMMAND})",
                sys.stderr)
        return
    try:
        pip_install(root, SASS_TOOLS, why)
    except LabError as e:
        say(f"note: {e}: the SASS checks will skip", sys.stderr)
