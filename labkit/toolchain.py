"""Set-up: find the tools (installing only what is missing: Meson and Ninja into .venv
with pip, Catch2 with apt when root), then configure build/ once. `./lab setup
--gpu-arch=80,90` also chooses the GPU architectures, through the Meson lab found."""

from __future__ import annotations

import os
import re
import shutil
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Optional

from .core import EXIT_FAIL, EXIT_OK, EXIT_USAGE, ROOT, LabError
from .processes import child_env, find_nvcc, last_lines, run_quiet, stream_command, tool_version
from .state import state_dir
from .terminal import display_path, progress, say

MIN_MESON = (1, 3)
MIN_NINJA = (1, 8, 2)          # the oldest Ninja that Meson itself accepts


@dataclass
class Toolchain:
    """What setup found: the commands to use and the environment children need."""
    root: Path
    meson: str = ""
    meson_version: str = ""
    ninja_version: str = ""
    catch2_version: str = ""
    nvcc: str = ""
    env: dict = field(default_factory=dict)
    problems: list = field(default_factory=list)   # what doctor reports instead of failing

    @property
    def build(self) -> Path:
        return self.root / "build"


def version_tuple(text: str) -> tuple:
    """(1, 12, 1) from '1.12.1' or 'meson 1.12.1'; () when there is no version in it."""
    m = re.search(r"(\d+(?:\.\d+)*)", text or "")
    return tuple(int(x) for x in m.group(1).split(".")) if m else ()


def no_install() -> bool:
    """CML_LAB_NO_INSTALL=1: report what is missing, never install (Meson's test runs)."""
    return os.environ.get("CML_LAB_NO_INSTALL", "") not in ("", "0")


def is_root() -> bool:
    """apt-get needs root; lab never calls sudo on the learner's behalf."""
    return hasattr(os, "geteuid") and os.geteuid() == 0


def pick_tool(minimum: tuple, candidates: list, env: dict) -> tuple[str, str]:
    """(absolute path, version) of the first candidate that runs and is new enough."""
    for cand in candidates:
        if cand and os.access(cand, os.X_OK):
            v = tool_version(str(cand), env)
            if v and version_tuple(v) >= minimum:
                return str(Path(cand).absolute()), v
    return "", ""


REPAIR_VENV = "rm -rf .venv, then run the command again"


def venv_problem(venv: Path) -> str:
    """Why .venv cannot install packages ('' when it can, or when there is none yet): a
    python -m venv that was interrupted (Ctrl-C during the first ./lab run) or failed half-way
    (no ensurepip) leaves one without python or without pip, and every later pip install
    would fail with `No module named pip`."""
    if not venv.exists() and not venv.is_symlink():
        return ""
    python = venv / "bin" / "python"
    if not (venv / "pyvenv.cfg").is_file() or not python.exists():
        return "it has no python: its creation was interrupted"
    rc, out = run_quiet([python, "-m", "pip", "--version"], timeout=120)
    return "" if rc == 0 else f"its pip does not run: {last_lines(out)}"


def _remove_venv(venv: Path, why: str) -> None:
    """Removes a .venv lab cannot use (it holds nothing but what lab installs there)."""
    try:
        if venv.is_symlink():
            raise OSError(0, "it is a link to another folder")
        shutil.rmtree(venv)
    except OSError as e:
        raise LabError(f".venv is broken ({why}) and lab cannot remove it ({e.strerror}): "
                       f"{REPAIR_VENV}", EXIT_USAGE) from e


def create_venv(venv: Path) -> None:
    """python3 -m venv .venv, never left half-made: an interrupted or failed creation is
    removed, so the next command starts again instead of finding a .venv without pip.
    (Made in place, not in a temporary folder renamed at the end: a venv's scripts and
    activate hold its absolute path.)"""
    try:
        rc, out = run_quiet([sys.executable, "-m", "venv", str(venv)])
    except BaseException:          # Ctrl-C: nothing half-made stays behind
        shutil.rmtree(venv, ignore_errors=True)
        raise
    if rc != 0 or venv_problem(venv):
        shutil.rmtree(venv, ignore_errors=True)
        raise LabError(f"python3 -m venv .venv failed ({last_lines(out)}): "
                       "install python3-venv, or install the packages yourself", EXIT_USAGE)


def pip_install(root: Path, packages: list, why: str) -> None:
    """Creates .venv when needed (again when a broken one is there) and pip-installs
    packages into it, saying so first."""
    venv = root / ".venv"
    python = venv / "bin" / "python"
    progress(f"installing {' '.join(packages)} into .venv with pip: {why} (a minute)...")
    problem = venv_problem(venv)
    if problem:
        progress(f".venv is broken ({problem}): making it again...")
        _remove_venv(venv, problem)
    if not python.exists():
        create_venv(venv)
    rc, out = run_quiet([python, "-m", "pip", "install", "--quiet", "--disable-pip-version-check",
                         *packages])
    if rc != 0:
        raise LabError(f"pip install {' '.join(packages)} failed: {last_lines(out)}", EXIT_USAGE)


def ensure_meson_ninja(tc: Toolchain, venv_bin: Path) -> None:
    """Uses the system's Meson >= 1.3 and Ninja when new enough, else those in .venv,
    installing into .venv with pip only what is missing. Meson finds Ninja on PATH, so a
    Ninja from .venv puts .venv/bin first on the children's PATH."""
    path = tc.env["PATH"]
    meson = pick_tool(MIN_MESON, [shutil.which("meson", path=path), venv_bin / "meson"], tc.env)
    ninja = pick_tool(MIN_NINJA, [shutil.which("ninja", path=path), venv_bin / "ninja"], tc.env)
    missing = ([] if meson[0] else ["meson>=1.3"]) + ([] if ninja[0] else ["ninja"])
    if missing:
        what = " and ".join(p.split(">")[0].capitalize() for p in missing)
        fix = "python3 -m venv .venv && .venv/bin/pip install " + " ".join(
            f"'{p}'" if ">" in p else p for p in missing)
        if no_install():
            raise LabError(f"{what} missing or too old (Meson >= 1.3 needed): {fix} "
                           "(CML_LAB_NO_INSTALL is set, so lab installs nothing)", EXIT_USAGE)
        pip_install(tc.root, missing, f"the system has no {what} new enough")
        meson = meson if meson[0] else pick_tool(MIN_MESON, [venv_bin / "meson"], tc.env)
        ninja = ninja if ninja[0] else pick_tool(MIN_NINJA, [venv_bin / "ninja"], tc.env)
        if not (meson[0] and ninja[0]):
            raise LabError(f"{what} in .venv do not run after installing them: {fix}", EXIT_USAGE)
    if Path(ninja[0]).parent != Path(shutil.which("ninja", path=path) or "/").parent:
        tc.env = child_env([Path(ninja[0]).parent] + [Path(p) for p in path.split(os.pathsep)])
    tc.meson, tc.meson_version = meson
    tc.ninja_version = ninja[1]


def ensure_catch2(tc: Toolchain, required: bool) -> None:
    """Catch2 (through pkg-config) for the tests: apt-get when root, else one line saying
    what to install. When not required (run, bench, doctor) a miss is noted, not fatal."""
    def present() -> str:
        if not shutil.which("pkg-config", path=tc.env["PATH"]):
            return ""
        rc, _ = run_quiet(["pkg-config", "--exists", "catch2"], tc.env)
        if rc != 0:
            return ""
        rc, out = run_quiet(["pkg-config", "--modversion", "catch2"], tc.env)
        return out.strip() if rc == 0 else "?"

    tc.catch2_version = present()
    if tc.catch2_version:
        return
    fix = "apt-get install catch2 pkg-config (as root), or Catch2 v2/v3 with its pkg-config file"
    if is_root() and not no_install() and shutil.which("apt-get"):
        progress("installing Catch2 and pkg-config with apt-get (a minute)...")
        apt_env = dict(tc.env, DEBIAN_FRONTEND="noninteractive")
        for cmd in (["apt-get", "update", "-qq"],
                    ["apt-get", "install", "-y", "-qq", "--no-install-recommends",
                     "catch2", "pkg-config"]):
            rc, out = run_quiet(cmd, apt_env)
            if rc != 0:
                msg = f"{' '.join(cmd)} failed: {last_lines(out)}"
                if required:
                    raise LabError(msg, EXIT_USAGE)
                tc.problems.append(msg)
                return
        tc.catch2_version = present()
        if tc.catch2_version:
            return
    why = "Catch2 and pkg-config are missing" + (
        " (CML_LAB_NO_INSTALL is set, so lab installs nothing)" if no_install() else "")
    if required:
        raise LabError(f"{why}: install them: {fix}", EXIT_USAGE)
    tc.problems.append(f"{why}: ./lab check needs them: {fix}")


def ensure_nvcc(tc: Toolchain) -> None:
    """nvcc must be reachable; its folder goes first on the children's PATH (Meson finds the
    compiler and the toolkit through it)."""
    nvcc = shutil.which("nvcc", path=tc.env["PATH"])
    path = Path(nvcc) if nvcc else find_nvcc()
    if path is None:
        raise LabError("nvcc not found (not on PATH, not at /usr/local/cuda/bin/nvcc): "
                       "install the CUDA Toolkit 12 or newer, or put its bin/ on PATH", EXIT_USAGE)
    tc.nvcc = str(path)
    tc.env = child_env([path.parent] + [Path(p) for p in tc.env["PATH"].split(os.pathsep)])


def build_is_healthy(build: Path) -> bool:
    """A configured build/ has Meson's core data and a build.ninja."""
    return (build / "meson-private" / "coredata.dat").exists() and (build / "build.ninja").exists()


def _meson_setup(tc: Toolchain, extra: list, show_output: bool) -> tuple[int, str]:
    """`meson setup [extra] build/`, its output kept in .lab/configure.log."""
    log = state_dir(tc.root) / "configure.log"
    log.parent.mkdir(parents=True, exist_ok=True)
    cmd = [tc.meson, "setup", *extra, tc.build]
    if show_output:
        return stream_command(cmd, tc.env, tc.root, log)
    rc, out = run_quiet(cmd, tc.env, tc.root)
    log.write_text(out, encoding="utf-8")
    return rc, out


def _configure_failed(out: str, tc: Toolchain) -> LabError:
    """Meson's first ERROR line (or its last line) and where the whole log is."""
    errors = [l for l in out.splitlines() if "ERROR" in l]
    why = errors[0].strip() if errors else last_lines(out)
    log = state_dir(tc.root) / "configure.log"
    return LabError(f"configuring build/ failed: {why} (full log: {display_path(log)})", EXIT_FAIL)


def configure(tc: Toolchain, show_output: bool = False) -> None:
    """Configures build/ once; reconfigures (or wipes) only when build/ is broken. The
    project's defaults already pick a release build and the GPU's architecture.
    show_output streams Meson's output (the self-test, whose log is all CI keeps)."""
    build = tc.build
    if build_is_healthy(build):
        return
    if (build / "meson-private" / "coredata.dat").exists():
        progress("build/ is incomplete: reconfiguring it...")
        rc, out = _meson_setup(tc, ["--reconfigure"], show_output)
        if rc != 0:
            progress("reconfiguring failed: configuring build/ from scratch (about a minute)...")
            rc, out = _meson_setup(tc, ["--wipe"], show_output)
    else:
        if build.exists() and any(build.iterdir()):
            if not ((build / "meson-logs").exists() or (build / "meson-private").exists()):
                raise LabError("build/ exists but is not a Meson build folder: move it away "
                               "and run again", EXIT_USAGE)
            shutil.rmtree(build)   # a setup that died half-way: nothing in it is the learner's
        progress("configuring build/ (first time, about a minute)...")
        rc, out = _meson_setup(tc, [], show_output)
    if rc != 0:
        raise _configure_failed(out, tc)


def find_tools(root: Path = ROOT, catch2_required: bool = True,
               quiet_problems: bool = False) -> Toolchain:
    """Detects first, installs only what is missing. Catch2 is required only where tests
    are built (check, test): a learner without it can still run their program."""
    tc = Toolchain(root=root, env=child_env([]))
    ensure_nvcc(tc)
    ensure_meson_ninja(tc, root / ".venv" / "bin")
    ensure_catch2(tc, catch2_required)
    if not quiet_problems:
        for p in tc.problems:
            say(f"note: {p}", sys.stderr)
    return tc


def setup(root: Path = ROOT, catch2_required: bool = True, quiet_problems: bool = False,
          show_output: bool = False) -> Toolchain:
    """The tools, then build/ configured once: what every command that builds starts with."""
    tc = find_tools(root, catch2_required, quiet_problems)
    if not build_is_healthy(tc.build):  # Meson looks for NCCL when it configures build/
        from .nccl import ensure_nccl   # (imported here: it uses this module)
        ensure_nccl(tc, root)
    configure(tc, show_output)
    return tc


# --------------------------------------------------------------------------------------
# GPU architectures: ./lab setup --gpu-arch=80,90
# --------------------------------------------------------------------------------------

# A compute capability as Meson's gpu_arch wants it (90, 100, the feature-specific 90a, 100f),
# and the other ways people write one: nvcc's sm_90 / compute_90 (or sm90), and 9.0 as
# nvidia-smi and NVIDIA's tables print it.
_ARCH = re.compile(r"^(?:sm_?|compute_?)?(\d{2,3}[af]?)$")
_DOTTED = re.compile(r"^(\d{1,2})\.(\d)([af]?)$")


def _one_arch(text: str) -> str:
    """'90' from 90, sm_90, sm90, compute_90 or 9.0 ('90a' from sm_90a or 9.0a); '' when
    it is none of them."""
    m = _ARCH.match(text)
    if m:
        return m.group(1)
    m = _DOTTED.match(text)
    return "".join(m.groups()) if m else ""


def parse_gpu_arch(text: str) -> str:
    """`auto` or a comma list of compute capabilities, normalised to what the build's
    gpu_arch option wants (80,90,90a); anything else is a usage error, at once."""
    value = text.strip().lower()
    if value == "auto":
        return value
    archs = [a.strip() for a in value.split(",")]
    normal = [_one_arch(a) for a in archs]
    bad = [a for a, n in zip(archs, normal) if not n]
    if not archs or bad:
        raise ValueError(f"'{', '.join(bad) or text}' is not a compute capability: give 'auto' or "
                         "a list like 80,90 (sm_90, compute_90 and 9.0 mean 90 too)")
    return ",".join(dict.fromkeys(normal))


def unsupported_archs(archs: str, nvcc: str) -> list[str]:
    """The architectures of a gpu_arch value this nvcc cannot compile for ([] when it can,
    or when nvcc cannot list them)."""
    if archs == "auto":
        return []
    rc, out = run_quiet([nvcc, "--list-gpu-code"], timeout=60)
    known = set(re.findall(r"sm_(\w+)", out)) if rc == 0 else set()
    if not known:
        return []
    return [a for a in archs.split(",") if a not in known and a.rstrip("af") not in known]


def choose_gpu_arch(tc: Toolchain, archs: str) -> str:
    """Configures build/ for the architectures given; returns Meson's own line about them."""
    bad = unsupported_archs(archs, tc.nvcc)
    if bad:
        rc, out = run_quiet([tc.nvcc, "--list-gpu-code"], timeout=60)
        have = ",".join(re.findall(r"sm_(\w+)", out))
        raise LabError(f"this nvcc cannot compile for {', '.join('sm_' + a for a in bad)} "
                       f"(it knows {have})", EXIT_USAGE)
    option = f"-Dgpu_arch={archs}"
    configured = build_is_healthy(tc.build)
    before = configured_archs(tc.build) if configured else None
    progress(f"{'reconfiguring' if configured else 'configuring'} build/ with {option}...")
    rc, out = _meson_setup(tc, (["--reconfigure"] if configured else []) + [option], False)
    if rc != 0:
        raise _configure_failed(out, tc)
    after = configured_archs(tc.build)
    if configured and after is not None and after == before:
        return f"CUDA architectures: {after} (as before: nothing to rebuild)"
    return (f"CUDA architectures: {after} (new architectures: the next build recompiles everything)"
            if after else f"gpu_arch={archs}")


def configured_archs(build: Path) -> Optional[str]:
    """The architectures build/ was last configured for ('90' or '80,90'), from Meson's
    log of its last configure; None when it does not say."""
    try:
        log = (build / "meson-logs" / "meson-log.txt").read_text(encoding="utf-8", errors="replace")
    except OSError:
        return None
    found = re.findall(r"CUDA architectures: ([0-9a-z,]+)", log)
    return found[-1] if found else None


def cmd_setup(args, root: Path = ROOT) -> int:
    """Prepares everything the other commands need, and says what it found."""
    tc = find_tools(root)
    arch_note = ""
    if args.gpu_arch:     # one configure with the option, not a default one and then another
        arch_note = f"; {choose_gpu_arch(tc, args.gpu_arch)}"
    else:
        configure(tc)
    say(f"ready: meson {tc.meson_version} ({tc.meson}), ninja {tc.ninja_version}, "
        f"Catch2 {tc.catch2_version}, nvcc {tc.nvcc}; build/ is configured{arch_note}")
    return EXIT_OK
