"""./lab doctor: what this machine has for the course, each with a fix when missing."""

from __future__ import annotations

import re
import shutil
from pathlib import Path
from typing import Optional

from .build import BuildFailed, build_target
from .core import EXIT_OK, EXIT_SKIP, ROOT, LabError
from .plots import python_with_matplotlib
from .processes import find_cuda_tool, find_nvcc, last_lines, run_quiet, tool_version
from .sass_tools import INSTALL_COMMAND, find_sass_tools
from .terminal import describe_rc, display_path, paint, say
from .toolchain import is_root, setup


def doctor_line(label: str, ok: Optional[bool], text: str) -> None:
    """One aligned line: ok / MISSING / note."""
    word, colour = {True: ("ok", "green"), False: ("MISSING", "red"), None: ("note", "yellow")}[ok]
    say(f"  {label:<20} {paint(word.ljust(7), colour)} {text}")


def counter_permission() -> tuple[Optional[bool], str]:
    """Whether ncu may read GPU counters: RmProfilingAdminOnly=1 keeps them for root."""
    try:
        text = Path("/proc/driver/nvidia/params").read_text()
    except OSError:
        return None, "unknown (no /proc/driver/nvidia/params: no NVIDIA driver loaded)"
    m = re.search(r"RmProfilingAdminOnly:\s*(\d+)", text)
    if not m:
        return None, "unknown (RmProfilingAdminOnly not in /proc/driver/nvidia/params)"
    if m.group(1) == "0":
        return True, "every user may read GPU performance counters"
    if is_root():
        return True, "counters are for admins only, and you are root"
    return False, ("counters are for admins only (RmProfilingAdminOnly=1): run ncu as root, or allow "
                   "all users: echo 'options nvidia NVreg_RestrictProfilingToAdminUsers=0' | sudo tee "
                   "/etc/modprobe.d/nvidia-profiling.conf, then reboot")


def _toolkit_and_driver() -> None:
    """nvcc and the driver, as nvidia-smi sees them."""
    say(paint("toolkit and driver", "bold"))
    nvcc = find_nvcc()
    if nvcc:
        rc, out = run_quiet([nvcc, "--version"])
        rel = [l for l in out.splitlines() if "release" in l]
        doctor_line("nvcc", True, f"{nvcc}: {rel[-1].strip() if rel else last_lines(out)}")
    else:
        doctor_line("nvcc", False, "install the CUDA Toolkit 12+ or put its bin/ on PATH")
    smi = shutil.which("nvidia-smi")
    if smi:
        rc, out = run_quiet([smi, "--query-gpu=name,driver_version,compute_cap",
                             "--format=csv,noheader"], timeout=60)
        if rc == 0 and out.strip():
            for line in out.strip().splitlines():
                doctor_line("GPU (nvidia-smi)", True, line.strip())
        else:
            doctor_line("GPU (nvidia-smi)", False, f"nvidia-smi failed: {last_lines(out)}")
    else:
        doctor_line("driver", False, "nvidia-smi not found: no NVIDIA driver on this machine")


def _build_tools(root: Path):
    """Meson, Ninja, Catch2 and build/: the Toolchain, or None when set-up failed."""
    say(paint("build tools", "bold"))
    try:
        tc = setup(root, catch2_required=False, quiet_problems=True)
    except LabError as e:
        doctor_line("setup", False, str(e))
        return None
    doctor_line("Meson", True, f"{tc.meson_version} ({tc.meson})")
    doctor_line("Ninja", True, tc.ninja_version)
    if tc.catch2_version:
        doctor_line("Catch2", True, tc.catch2_version)
    for p in tc.problems:
        doctor_line("Catch2", False, p)
    doctor_line("build/", True, "configured")
    return tc


def _gpu_facts(tc) -> bool:
    """What cml_doctor reads from the GPU; whether a GPU is usable."""
    say(paint("GPU facts (build/labkit/programs/cml_doctor)", "bold"))
    if tc is None:
        doctor_line("cml_doctor", False, "not built: fix the setup problem above first")
        return False
    try:
        exe = build_target(tc, "cml_doctor", "labkit/programs/cml_doctor")
    except BuildFailed as e:
        doctor_line("cml_doctor", False, f"does not build (log: {display_path(e.log)})")
        return False
    except LabError as e:
        doctor_line("cml_doctor", False, str(e))
        return False
    rc, out = run_quiet([exe], tc.env, timeout=120)
    for line in out.rstrip().splitlines():
        say("    " + line)
    if rc == 77:
        doctor_line("GPU", False, "no usable GPU (reason above)")
    elif rc != 0:
        doctor_line("GPU", False, f"cml_doctor ended with {describe_rc(rc)}")
    return rc == 0


def _profilers(root: Path, tc) -> None:
    """ncu and its counter permission, compute-sanitizer, cuobjdump and nvdisasm, matplotlib."""
    say(paint("profilers and checkers", "bold"))
    ncu = find_cuda_tool("ncu")
    if ncu:
        doctor_line("ncu", True, tool_version(ncu).replace("\n", " ") or ncu)
        ok, text = counter_permission()
        doctor_line("ncu counters", ok, text)
    else:
        doctor_line("ncu", False, "Nsight Compute not found: ncu-based checks will skip "
                    "(install it with the CUDA Toolkit)")
    san = find_cuda_tool("compute-sanitizer")
    doctor_line("compute-sanitizer", bool(san),
                (tool_version(san) or san) if san else "not found: ./lab test --setup memcheck needs it")
    # Where the SASS checks will find them: with the children's PATH (nvcc's folder first).
    sass = find_sass_tools(tc.env if tc is not None else None, root)
    doctor_line("cuobjdump, nvdisasm", bool(sass),
                f"in {display_path(sass)} (the SASS checks: ./lab check, with a GPU or without)" if sass else
                "not found: the SASS checks of ./lab check skip; ./lab run or ./lab check installs them into "
                f".venv from NVIDIA's pip packages (or: {INSTALL_COMMAND})")
    from .nccl import NCCL_WHEEL, nccl_header_dirs   # imported here: it uses the toolchain
    nccl = next((d for d in nccl_header_dirs(root) if (d / "nccl.h").exists()), None)
    doctor_line("NCCL", True if nccl else None,
                f"nccl.h in {display_path(nccl)} (chapter 10's ring against NCCL)" if nccl else
                f"not found: chapter 10 leaves out its comparison with NCCL (.venv/bin/pip install {NCCL_WHEEL}, "
                "then ./lab setup; on a machine with two GPUs ./lab setup installs it)")
    py = python_with_matplotlib(root)
    doctor_line("matplotlib", True if py else None,
                f"with {py}" if py else "not found: ./lab bench writes CSV only (pip install matplotlib)")


def cmd_doctor(args, root: Path = ROOT) -> int:
    """What this machine has for the course, each with a fix when missing. Never fails hard:
    exit 0 when a GPU is usable, else 77."""
    _toolkit_and_driver()
    tc = _build_tools(root)
    gpu_ok = _gpu_facts(tc)
    _profilers(root, tc)
    say()
    say(paint("a GPU is usable", "green") if gpu_ok else paint("no usable GPU here: GPU tests will skip", "yellow"))
    return EXIT_OK if gpu_ok else EXIT_SKIP
