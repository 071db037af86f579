"""./lab profile NN: your kernels and the solution's, on the same input, under Nsight Compute;
the counters the chapter teaches side by side, and what a difference means.

The kernels run in the chapter's test programs (test_chNN_learner, test_chNN_solution), in
their hidden [.target] case with CML_TARGET naming what to launch: the same launches the
tests' ncu checks profile. What to read is chapters/NN_topic/profile.json (labkit/
profile_rules.py). Each run is kept under .lab/profile/NN/ as JSON and CSV, so two attempts
can be compared (--compare).
"""

from __future__ import annotations

import csv
import io
import json
import os
import shutil
import tempfile
import time
from pathlib import Path
from typing import Optional

from .build import build_targets, target_output
from .chapters import Chapter, chapter_of, require_exercise
from .core import EXIT_FAIL, EXIT_OK, EXIT_SKIP, EXIT_USAGE, ROOT, LabError
from .doctor import counter_permission
from .needs import course_needs
from .processes import find_cuda_tool, last_lines, run_quiet
from .plots import python_with_matplotlib
from .profile_rules import (DURATION, SpecError, TimelineSpec, compare, compare_runs, duration_row, launch_line,
                            launch_of, parse_ncu_csv, parse_spec, slower_unexplained, stall_rows, table_lines,
                            timeline_findings)
from .run import program_target
from .timeline import common_span, parse_trace, render, summarize
from .state import state_dir, write_atomically
from .terminal import display_path, paint, progress, say
from .toolchain import setup

PROFILE_TIMEOUT_S = 180          # one kernel under ncu: seconds, unless it never ends
FIXTURES = Path("tests") / "cpu" / "fixtures" / "profile"   # --record: real counter sets for the cpu suite
SPEC_NAME = "profile.json"


def chapters_with_profiles(root: Path = ROOT) -> list:
    """The chapter numbers that have a profile spec."""
    return sorted(p.parent.name.split("_")[0] for p in (root / "chapters").glob(f"*/{SPEC_NAME}"))


def load_spec(ch: Chapter, root: Path = ROOT):
    path = ch.folder / SPEC_NAME
    if not path.exists():
        have = ", ".join(chapters_with_profiles(root)) or "none yet"
        raise LabError(f"chapter {ch.num} has no profile yet (chapters with one: {have}); "
                       f"./lab check {ch.num} runs its tests", EXIT_SKIP)
    try:
        return parse_spec(path.read_text(encoding="utf-8"), display_path(path))
    except SpecError as e:
        raise LabError(str(e), EXIT_FAIL)


def gpu_name() -> Optional[str]:
    """The first GPU nvidia-smi lists, or None where there is none (or no driver), or where
    CUDA_VISIBLE_DEVICES hides every GPU from CUDA programs ("" or -1...)."""
    visible = os.environ.get("CUDA_VISIBLE_DEVICES")
    if visible is not None and (visible.strip() == "" or visible.strip().startswith("-1")):
        return None
    smi = shutil.which("nvidia-smi")
    if not smi:
        return None
    rc, out = run_quiet([smi, "--query-gpu=name", "--format=csv,noheader"], timeout=60)
    names = [l.strip() for l in out.splitlines() if l.strip()]
    return names[0] if rc == 0 and names else None


def gpu_compute_capability() -> Optional[tuple]:
    """The first GPU's compute capability as (major, minor), or None where nvidia-smi does not
    say (an old driver: then every step is tried, and a target that cannot run says why)."""
    smi = shutil.which("nvidia-smi")
    if not smi:
        return None
    rc, out = run_quiet([smi, "--query-gpu=compute_cap", "--format=csv,noheader"], timeout=60)
    first = out.strip().splitlines()[0].strip() if rc == 0 and out.strip() else ""
    major, _, minor = first.partition(".")
    return (int(major), int(minor or 0)) if major.isdigit() and (minor or "0").isdigit() else None


def unmet_need(chapter: str, step: int, cc: Optional[tuple], root: Path = ROOT) -> str:
    """Why this GPU cannot run the step's kernel (needs.txt's compute capability), or ""."""
    if cc is None:
        return ""
    for n in course_needs(root):
        if n.chapter != chapter or n.key != "cc" or not n.covers(step):
            continue
        major, _, minor = n.value.partition(".")
        if cc < (int(major), int(minor or 0)):
            return f"step {step} needs {n.describe()} ({n.what}); this GPU has {cc[0]}.{cc[1]}"
    return ""


def gpu_slug(name: str) -> str:
    """A GPU's name as a file name's part: "NVIDIA H100 80GB HBM3" -> "h100"."""
    words = [w for w in name.lower().replace("nvidia", "").split() if w]
    return "".join(c for c in (words[0] if words else "gpu") if c.isalnum()) or "gpu"


def require_profiler() -> str:
    """ncu's path, or exit 77 with the one-line fix (a machine that cannot profile)."""
    ncu = find_cuda_tool("ncu")
    if not ncu:
        raise LabError("ncu (Nsight Compute) is not installed here: ./lab doctor says how to get it", EXIT_SKIP)
    ok, text = counter_permission()
    if ok is False:
        raise LabError(f"ncu may not read this GPU's counters: {text}", EXIT_SKIP)
    return ncu


def profile_launch(ncu: str, exe: Path, target: str, kernel: str, metrics: list, env: dict, cwd: Path,
                   whose: str) -> dict:
    """The metrics of the first launch of `kernel` in `exe`'s [.target] case under ncu."""
    with tempfile.TemporaryDirectory(prefix="cml-profile-") as tmp:
        log = Path(tmp) / "ncu.csv"
        cmd = [ncu, "--clock-control", "none", "--print-units", "base", "--csv", "--page", "raw",
               "--metrics", ",".join(metrics), "--kernel-name", f"regex:{kernel}", "--launch-count", "1",
               "--log-file", log, exe, "[.target]"]
        run_env = dict(env, CML_TARGET=target, CML_TRACE="off", CML_ISOLATE="off")
        rc, out = run_quiet(cmd, run_env, cwd, PROFILE_TIMEOUT_S)
        text = log.read_text(encoding="utf-8", errors="replace") if log.exists() else ""
    if "ERR_NVGPUCTRPERM" in text + out:
        raise LabError("ncu may not read this GPU's counters (ERR_NVGPUCTRPERM): ./lab doctor says how to "
                       "allow it", EXIT_SKIP)
    launch = launch_of(parse_ncu_csv(text), kernel)
    if launch is None:
        if rc == 124:
            raise LabError(f"{whose} {kernel} did not finish within {PROFILE_TIMEOUT_S} s under ncu: a kernel "
                           f"that never ends (./lab check names the step)", EXIT_FAIL)
        if rc == EXIT_SKIP:
            raise LabError(f"the test program skipped: {last_lines(out)}", EXIT_SKIP)
        raise LabError(f"ncu profiled no launch of {whose} {kernel} (exit {rc}): {last_lines(out, 3)} "
                       f"— ./lab check says what fails first", EXIT_FAIL)
    return launch["values"]


def record(folder: Path, stem: str, result: dict) -> Path:
    """The run as JSON (for --compare) and CSV (one row per counter); the JSON's path."""
    out = io.StringIO()
    w = csv.writer(out)
    w.writerow(["chapter", "step", "kernel", "counter", "yours", "solution", "differs", "meaning"])
    w.writerow([result["chapter"], result["step"], result["kernel"], "duration (us)", result["duration_us"],
                result["reference_duration_us"], "", ""])
    for r in result["rows"]:
        w.writerow([result["chapter"], result["step"], result["kernel"], r["label"], r["yours"], r["reference"],
                    "yes" if r["differs"] else "no", r["sentence"]])
    write_atomically(folder / f"{stem}.csv", out.getvalue())
    write_atomically(folder / f"{stem}.json", json.dumps(result, indent=1))
    return folder / f"{stem}.json"


def previous_run(folder: Path, step: int, spec_text: str, newest: Path) -> Path:
    """--compare's argument: a saved JSON, or `last` (this step's run before `newest`)."""
    if spec_text != "last":
        p = Path(spec_text)
        if not p.exists():
            raise LabError(f"--compare: no file {spec_text}", EXIT_USAGE)
        return p
    runs = sorted(p for p in folder.glob(f"step{step}-*.json") if p != newest)
    if not runs:
        raise LabError(f"--compare last: no earlier profile of step {step} in {display_path(folder)}", EXIT_USAGE)
    return runs[-1]


def run_for_trace(exe: Path, spec: TimelineSpec, folder: Path, env: dict, cwd: Path, whose: str) -> list:
    """Runs a chapter program with --out=folder; the activities of the trace it wrote."""
    rc, out = run_quiet([exe, *spec.args, f"--out={folder}"], env, cwd, PROFILE_TIMEOUT_S)
    if rc == EXIT_SKIP:
        raise LabError(f"the program skipped: {last_lines(out)}", EXIT_SKIP)
    if rc != 0:
        raise LabError(f"{whose} program failed (exit {rc}): {last_lines(out, 3)} — ./lab check says what fails "
                       f"first", EXIT_FAIL)
    trace = folder / spec.file
    if not trace.exists():
        raise LabError(f"{whose} program wrote no {spec.file}: {last_lines(out)} (the trace needs CUPTI: "
                       f"./lab doctor)", EXIT_FAIL)
    return parse_trace(trace.read_text(encoding="utf-8"))


def profile_timeline(ch: Chapter, spec: TimelineSpec, args, gpu: str, root: Path) -> int:
    """A transfer chapter: both programs' traces in the terminal, the overlap and the gaps,
    the PNG of the chapter's plot.py where matplotlib is there."""
    tc = setup(root, catch2_required=False)
    targets = [program_target(ch, True)] + ([] if args.solution else [program_target(ch, False)])
    build_targets(tc, [t for t, _ in targets], f"build-profile-{ch.num}.log")
    stamp = time.strftime("%Y%m%d-%H%M%S")
    base = state_dir(root) / "profile" / ch.num
    runs = {}
    for (target, fallback), whose in zip(targets, ["the solution's"] + ([] if args.solution else ["your"])):
        folder = base / f"{stamp}-{'solution' if 'solution' in whose else 'yours'}"
        folder.mkdir(parents=True, exist_ok=True)
        progress(f"running {whose} program with a CUPTI trace...")
        runs[whose] = (folder, run_for_trace(target_output(tc.build, target, fallback), spec, folder, tc.env,
                                             tc.build, whose))
    say(f"chapter {ch.num}: {spec.what}; {gpu}")
    span = common_span([acts for _, acts in runs.values()])
    summaries = {}
    for whose in ["your", "the solution's"]:
        if whose not in runs:
            continue
        folder, acts = runs[whose]
        t0 = min((a.start for a in acts), default=0)
        summaries[whose] = summarize(acts)
        say("")
        say(paint(f"{whose} {spec.file} (one scale for both)", "bold"))
        for line in render(acts, span=(t0, t0 + max(span, 1))):
            say(line)
        if summaries[whose]:
            for line in summaries[whose].lines():
                say("  " + line)
    findings = []
    if "your" in summaries and summaries["your"] and summaries["the solution's"]:
        mine, ref = summaries["your"], summaries["the solution's"]
        say(f"\n  your span is {mine.span_us / ref.span_us:.2f}× the solution's")
        findings = timeline_findings(mine, ref, spec, ch.num)
        for f in findings:
            say("  " + f)
        if not findings:
            say("  nothing this trace is judged on differs from the solution's")
    if getattr(args, "record", None):
        stem = Path(spec.file).stem
        stem = stem[len("timeline_"):] if stem.startswith("timeline_") else stem
        for whose, (folder, _) in runs.items():
            label = "solution" if whose == "the solution's" else args.record
            fixture = root / FIXTURES / f"{ch.num}_timeline_{stem}_{label}_{gpu_slug(gpu)}.csv"
            write_atomically(fixture, (folder / spec.file).read_text(encoding="utf-8"))
            say(f"  fixture: {display_path(fixture)}")
    result = {"chapter": ch.num, "gpu": gpu, "when": stamp, "file": spec.file,
              "summaries": {k: (v.__dict__ if v else None) for k, v in summaries.items()}, "findings": findings}
    write_atomically(base / f"timeline-{stamp}.json", json.dumps(result, indent=1))
    if args.compare and summaries.get("your"):
        before = previous_timeline(base, args.compare, base / f"timeline-{stamp}.json")
        was = json.loads(before.read_text(encoding="utf-8")).get("summaries", {}).get("your") or {}
        now = summaries["your"].__dict__
        say(f"  yours now against {display_path(before)}:")
        for key, label in (("span_us", "span (µs)"), ("copy_kernel", "copy and kernel together"),
                           ("in_out", "copies both ways together"), ("idle_us", "nothing running (µs)"),
                           ("htod_copies", "host→device copies"), ("pageable_copies", "copies of pageable memory"),
                           ("gpu_faults", "GPU page faults"), ("host_waited_us", "host in CUDA calls (µs)")):
            say(f"  {label:<28} {was.get(key, float('nan')):>12,.3f} {now[key]:>12,.3f}")
    say(f"  saved: {display_path(base / f'timeline-{stamp}.json')}, the traces under {display_path(base)}/{stamp}-*/")
    py = python_with_matplotlib(root)
    if py and ch.plot_script.exists():
        for folder, _ in runs.values():
            rc, _ = run_quiet([py, ch.plot_script, folder], dict(os.environ, MPLBACKEND="Agg"), root, 300)
            if rc == 0:
                say(f"  figures: {display_path(folder)}/*.png")
    return EXIT_OK


def previous_timeline(folder: Path, spec_text: str, newest: Path) -> Path:
    """--compare for a trace profile: a saved timeline JSON, or `last`."""
    if spec_text != "last":
        p = Path(spec_text)
        if not p.exists():
            raise LabError(f"--compare: no file {spec_text}", EXIT_USAGE)
        return p
    runs = sorted(p for p in folder.glob("timeline-*.json") if p != newest)
    if not runs:
        raise LabError(f"--compare last: no earlier profile in {display_path(folder)}", EXIT_USAGE)
    return runs[-1]


def cmd_profile(args, root: Path = ROOT) -> int:
    """./lab profile NN [--step K] [--solution] [--compare PREVIOUS]."""
    ch = chapter_of(args, root)
    spec = load_spec(ch, root)
    timeline = isinstance(spec, TimelineSpec)
    if timeline and args.step is not None and args.step != spec.step:
        raise LabError(f"chapter {ch.num}'s profile is of step {spec.step}'s pipeline: --step {spec.step} or "
                       f"none", EXIT_USAGE)
    if not timeline and args.step is not None and args.step not in spec.steps:
        raise LabError(f"chapter {ch.num} has no profile of step {args.step} (steps with one: "
                       f"{', '.join(str(s) for s in sorted(spec.steps))})", EXIT_USAGE)
    if not args.solution:
        require_exercise(ch)
    gpu = gpu_name()
    if gpu is None:
        raise LabError("no NVIDIA GPU here (nvidia-smi lists none): ./lab profile runs your code on one", EXIT_SKIP)
    if timeline:
        return profile_timeline(ch, spec, args, gpu, root)
    steps = [args.step] if args.step is not None else sorted(spec.steps)
    cc = gpu_compute_capability()
    unmet = {k: unmet_need(ch.num, k, cc, root) for k in steps}
    if all(unmet.values()):
        raise LabError("; ".join(unmet.values()), EXIT_SKIP)
    ncu = require_profiler()
    tc = setup(root, catch2_required=True)
    solution_target, learner_target = f"test_ch{ch.num}_solution", f"test_ch{ch.num}_learner"
    build_targets(tc, [solution_target] if args.solution else [learner_target, solution_target],
                  f"build-profile-{ch.num}.log")
    reference_exe = target_output(tc.build, solution_target, f"tests/{solution_target}")
    learner_exe = reference_exe if args.solution else target_output(tc.build, learner_target, f"tests/{learner_target}")
    mine = "solution" if args.solution else "yours"
    folder = state_dir(root) / "profile" / ch.num
    say(f"chapter {ch.num}: {spec.what}; {gpu}")
    for step in steps:
        if unmet[step]:
            say("")
            say(paint(f"step {step}: skipped", "bold") + f" — {unmet[step]}")
            continue
        s = spec.steps[step]
        metrics = spec.metrics_of(step)
        progress(f"step {step}: {s.kernel} under ncu ({'the solution' if args.solution else 'yours, then the solution'})...")
        yours = profile_launch(ncu, learner_exe, s.target, s.kernel, metrics, tc.env, tc.build,
                               "the solution's" if args.solution else "your")
        reference = yours if args.solution else profile_launch(ncu, reference_exe, s.target, s.kernel, metrics,
                                                                 tc.env, tc.build, "the solution's")
        rows = compare(spec.counters_of(step), yours, reference, ch.num)
        rows += stall_rows(spec.stalls_of(step), yours, reference, ch.num)
        duration = duration_row(yours, reference)
        say("")
        say(paint(f"step {step}: {s.kernel}", "bold") + (f" — {s.note}" if s.note else ""))
        for line in table_lines(rows, duration, mine):
            say(line)
        launch = launch_line(yours, reference, mine)
        if launch:
            say(launch)
        unexplained = "" if args.solution else slower_unexplained(rows, duration, ch.num)
        if unexplained:
            say("  " + unexplained)
        elif not any(r.differs for r in rows) and not args.solution:
            say("  no counter differs from the solution's past its tolerance")
        stamp = time.strftime("%Y%m%d-%H%M%S")
        result = {"chapter": ch.num, "step": step, "kernel": s.kernel, "target": s.target, "gpu": gpu,
                  "when": stamp, "solution_only": bool(args.solution), "metrics_yours": yours,
                  "metrics_solution": reference, "duration_us": duration[0], "reference_duration_us": duration[1],
                  "rows": [r.__dict__ for r in rows]}
        saved = record(folder, f"step{step}-{stamp}", result)
        if getattr(args, "record", None):
            fixture = root / FIXTURES / f"{ch.num}_step{step}_{args.record}_{gpu_slug(gpu)}.json"
            write_atomically(fixture, json.dumps({"chapter": ch.num, "step": step, "kernel": s.kernel, "gpu": gpu,
                                               "date": time.strftime("%Y-%m-%d"), "learner_file": args.record,
                                               "yours": yours, "solution": reference}, indent=1, sort_keys=True))
            say(f"  fixture: {display_path(fixture)}")
        say(f"  saved: {display_path(saved)} (and .csv)")
        if args.compare:
            before = previous_run(folder, step, args.compare, saved)
            say(f"  yours now against {display_path(before)}:")
            for line in compare_runs(result, json.loads(before.read_text(encoding="utf-8"))):
                say(line)
    return EXIT_OK


__all__ = ["cmd_profile", "DURATION"]
