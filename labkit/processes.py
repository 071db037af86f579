"""Running child processes: the environment they get, quiet and streamed runs, and where
the CUDA tools are."""

import os
import shutil
import subprocess
from pathlib import Path
from typing import Iterable, Optional, Tuple

from .core import CUDA_DEFAULT_BIN
from .terminal import write


def child_env(extra_path: Iterable[Path]) -> dict:
    """The environment for every child: the user's, with the tool folders lab chose first."""
    env = dict(os.environ)
    parts = [str(p) for p in extra_path] + env.get("PATH", os.defpath).split(os.pathsep)
    seen, path = set(), []
    for p in parts:
        if p and p not in seen:
            seen.add(p)
            path.append(p)
    env["PATH"] = os.pathsep.join(path)
    return env


def run_quiet(cmd: list, env: Optional[dict] = None, cwd: Optional[Path] = None,
              timeout: Optional[float] = None) -> Tuple[int, str]:
    """Runs a command capturing stdout+stderr together; (returncode, text)."""
    try:
        r = subprocess.run([str(c) for c in cmd], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                           env=env, cwd=cwd, timeout=timeout)
    except FileNotFoundError as e:
        return 127, f"{cmd[0]}: not found ({e})"
    except subprocess.TimeoutExpired as e:
        out = (e.output or b"").decode(errors="replace")
        return 124, out + f"\n(timed out after {timeout:.0f} s)"
    return r.returncode, r.stdout.decode(errors="replace")


def stream_command(cmd: list, env: dict, cwd: Path, log: Path) -> Tuple[int, str]:
    """Runs a command showing its output as it goes, also keeping it (log file and text)."""
    log.parent.mkdir(parents=True, exist_ok=True)
    write("")           # a closed stdout is reported before the command starts, not during it
    chunks = []
    with open(log, "w", encoding="utf-8") as fh:
        try:
            p = subprocess.Popen([str(c) for c in cmd], stdout=subprocess.PIPE,
                                 stderr=subprocess.STDOUT, env=env, cwd=cwd)
        except OSError as e:
            return 127, f"{cmd[0]}: {e.strerror}"
        assert p.stdout is not None
        for raw in p.stdout:
            line = raw.decode(errors="replace")
            write(line)
            fh.write(line)
            chunks.append(line)
        rc = p.wait()
    return rc, "".join(chunks)


def last_lines(text: str, n: int = 1) -> str:
    """The last n non-empty lines: usually where a tool says why it failed."""
    lines = [l for l in text.strip().splitlines() if l.strip()]
    return "\n".join(lines[-n:]) if lines else "(no output)"


def tool_version(cmd: str, env: Optional[dict] = None) -> str:
    """First line of `cmd --version`, or '' when the tool is absent or fails."""
    try:
        r = subprocess.run([cmd, "--version"], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                           env=env, timeout=60)
    except (OSError, subprocess.TimeoutExpired):
        return ""
    if r.returncode != 0:
        return ""
    lines = r.stdout.decode(errors="replace").strip().splitlines()
    return lines[0].strip() if lines else ""


def find_cuda_tool(name: str) -> Optional[str]:
    """A CUDA tool (nvcc, ncu, compute-sanitizer...) on PATH or in the toolkit's bin/."""
    found = shutil.which(name)
    if found:
        return found
    candidate = CUDA_DEFAULT_BIN / name
    return str(candidate) if os.access(candidate, os.X_OK) else None


def find_nvcc() -> Optional[Path]:
    """nvcc on PATH, else the toolkit's usual place (often not on PATH on fresh machines)."""
    found = find_cuda_tool("nvcc")
    return Path(found) if found else None
