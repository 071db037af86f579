"""./lab profile's pure part: a chapter's profile spec (chapters/NN_topic/profile.json), ncu's
raw CSV page, and the rules that turn a pair of counter sets (yours, the solution's, same
kernel role, same input) into rows and sentences. No GPU, no files: tests/cpu/test_profile.py.

A spec:
  {"what": "...", "steps": {"K": {"kernel": NAME, "target": CML_TARGET, "note": ...}},
   "counters": [{"label": ..., "metric": M | "ratio": [NUM, DEN], "scale": S, "digits": D,
                 "worse": "higher" | "lower", "tolerance": T, "meaning": ..., "step": K,
                 "steps": [K, ...]}],
   "stalls": {"steps": [K, ...], "top": N, "tolerance": T, "floor": F,
              "meanings": {REASON: {"meaning": ..., "step": K}}}}
A counter differs where yours is worse than the solution's by more than `tolerance` times
the larger of the solution's value and `floor` (the scale of "a little": a counter near 0
in the solution does not make noise a difference); its sentence is `meaning`, pointing at
`step`'s hints. "stalls" adds, for its steps, the top N reasons warps of either kernel
waited (ncu's warp-state counters, in warps stalled per issued instruction); a reason with a
meaning is judged like a counter.
"""

from __future__ import annotations

import csv
import io
import json
from dataclasses import dataclass, field
from typing import Optional

DURATION = "gpu__time_duration.sum"     # ns: every profile reads it, beside the chapter's counters

# Why warps did not issue, as ncu names the reasons on every GPU from sm_75 (Kernel Profiling
# Guide, "Warp Stall Reasons"): each the average number of warps stalled for it per issued
# instruction.
STALL_REASONS = ("long_scoreboard", "short_scoreboard", "mio_throttle", "lg_throttle", "barrier", "membar",
                 "math_pipe_throttle", "not_selected", "selected", "wait", "dispatch_stall", "no_instruction",
                 "branch_resolving", "drain", "imc_miss", "tex_throttle", "sleeping")


def stall_metric(reason: str) -> str:
    return f"smsp__average_warps_issue_stalled_{reason}_per_issue_active.ratio"


# What the launch was: ncu's raw page gives these with every profile.
LAUNCH = ("launch__grid_size", "launch__block_size", "launch__registers_per_thread", "launch__sm_count")


class SpecError(ValueError):
    """A profile.json that does not say what ./lab profile needs."""


@dataclass
class Counter:
    label: str
    metrics: tuple                      # one metric, or (numerator, denominator)
    worse: str                          # "higher" or "lower": which way is worse
    tolerance: float                    # how much worse (a fraction) before it is a difference
    meaning: str                        # what the difference means, for a learner
    step: int                           # the step (and hints) that addresses it
    scale: float = 1.0
    digits: int = 3
    floor: float = 0.0                  # the least scale of "a little": near 0, noise is no difference
    steps: Optional[tuple] = None       # only these steps' kernels (None: every step)

    def value(self, values: dict) -> Optional[float]:
        """This counter of one kernel's metrics; None where ncu did not give them."""
        got = [values.get(m) for m in self.metrics]
        if any(v is None for v in got):
            return None
        if len(got) == 1:
            return got[0] * self.scale
        return got[0] / got[1] * self.scale if got[1] else None


@dataclass
class StepSpec:
    step: int
    kernel: str                         # the kernel's name as ncu shows it (a regex's text)
    target: str                         # CML_TARGET of the tests' [.target] case
    note: str = ""


@dataclass
class Stalls:
    steps: tuple                        # the steps whose kernels show their stall reasons
    top: int = 3                        # how many reasons, the largest of either kernel first
    tolerance: float = 0.5
    floor: float = 0.5                  # warps per issue: below this a reason is not worth a sentence
    meanings: dict = field(default_factory=dict)   # reason -> (meaning, step)


@dataclass
class Spec:
    what: str
    steps: dict                         # step number -> StepSpec
    counters: list = field(default_factory=list)
    stalls: Optional[Stalls] = None

    def counters_of(self, step: int) -> list:
        return [c for c in self.counters if c.steps is None or step in c.steps]

    def stalls_of(self, step: int) -> Optional[Stalls]:
        return self.stalls if self.stalls is not None and step in self.stalls.steps else None

    def metrics_of(self, step: int) -> list:
        """Every ncu metric the step's counters read, duration first, each once."""
        out = [DURATION]
        for c in self.counters_of(step):
            out += [m for m in c.metrics if m not in out]
        if self.stalls_of(step):
            out += [stall_metric(r) for r in STALL_REASONS]
        return out


@dataclass
class TimelineCheck:
    """One thing a transfer chapter's trace is judged on, yours against the solution's."""
    kind: str                           # one of TIMELINE_CHECKS
    step: int                           # the step (and hints) that addresses it
    meaning: str                        # what a difference means, for a learner
    tolerance: float = 0.15


# overlap: copies and kernels in flight together, less than the solution's by more than the
# tolerance (a fraction of the span); idle: the GPU idle between your operations, more than
# twice the solution's and 50 µs; copies: more host→device copies than the solution's by more
# than the tolerance (a fraction) and one; pageable: more copies with pageable host memory;
# faults: more GPU page faults than the solution's by more than the tolerance and 16;
# blocked: a host thread inside CUDA calls more than twice the solution's time and 200 µs;
# launch: a larger share of unified memory's host→device bytes moved while a thread was inside
# cudaLaunchKernel than the solution's, by more than the tolerance.
TIMELINE_CHECKS = ("overlap", "idle", "copies", "pageable", "faults", "blocked", "launch")


@dataclass
class TimelineSpec:
    """A transfer chapter's profile: its program run with --out, the CUPTI trace it writes."""
    what: str
    file: str                           # the trace of the learner's run (and the solution's)
    baseline: str                       # a trace drawn first for scale (the sequential run), or ""
    args: list                          # the program's arguments
    step: int                           # the step whose code the trace shows
    checks: list                        # TimelineCheck, in the order their sentences come


def _check_finding(c: TimelineCheck, yours, reference) -> str:
    if c.kind == "overlap" and yours.copy_kernel < reference.copy_kernel - c.tolerance:
        return (f"copies and kernels overlapped {100 * yours.copy_kernel:.0f}% of your span against "
                f"{100 * reference.copy_kernel:.0f}% of the solution's: {c.meaning}")
    if c.kind == "idle" and yours.idle_us > 2 * reference.idle_us + 50:
        return (f"the GPU sat idle {yours.idle_us:,.0f} µs between your operations against "
                f"{reference.idle_us:,.0f}: {c.meaning}")
    if c.kind == "copies" and yours.htod_copies > reference.htod_copies * (1 + c.tolerance) + 1:
        return (f"your run issued {yours.htod_copies} host→device copies against the solution's "
                f"{reference.htod_copies}: {c.meaning}")
    if c.kind == "pageable" and yours.pageable_copies > reference.pageable_copies:
        return (f"{yours.pageable_copies} of your copies moved pageable host memory (the solution's: "
                f"{reference.pageable_copies}): {c.meaning}")
    if c.kind == "blocked" and yours.host_waited_us > 2 * reference.host_waited_us + 200:
        return (f"your host waited {yours.host_waited_us:,.0f} µs inside CUDA calls ({yours.host_calls}) against "
                f"the solution's {reference.host_waited_us:,.0f}: {c.meaning}")
    if c.kind == "launch" and yours.launch_htod_share > reference.launch_htod_share + c.tolerance:
        return (f"{100 * yours.launch_htod_share:.0f}% of the bytes that moved to the GPU moved while your thread was "
                f"inside cudaLaunchKernel (the solution's: {100 * reference.launch_htod_share:.0f}%): {c.meaning}")
    if c.kind == "faults" and yours.gpu_faults > reference.gpu_faults * (1 + c.tolerance) + 16:
        return (f"the GPU took {yours.gpu_faults:,} page faults in your run against the solution's "
                f"{reference.gpu_faults:,}: {c.meaning}")
    return ""


def timeline_findings(yours, reference, spec: TimelineSpec, chapter: str) -> list:
    """Sentences for a learner's trace summary against the solution's (timeline.Summary)."""
    out = []
    for c in spec.checks:
        text = _check_finding(c, yours, reference)
        if text:
            out.append(f"{text} (step {c.step}; ./lab hint {chapter} --step {c.step})")
    return out


def _need(d: dict, key: str, kind, where: str):
    if key not in d or not isinstance(d[key], kind):
        raise SpecError(f"{where}: '{key}' is missing or not a {getattr(kind, '__name__', kind)}")
    return d[key]


def parse_spec(text: str, where: str = "profile.json"):
    """The spec in `text` (a Spec, or a TimelineSpec for a transfer chapter); SpecError
    naming what is wrong."""
    try:
        d = json.loads(text)
    except json.JSONDecodeError as e:
        raise SpecError(f"{where}: not JSON ({e})")
    if not isinstance(d, dict):
        raise SpecError(f"{where}: want an object")
    if "timeline" in d:
        t = _need(d, "timeline", dict, where)
        w = f"{where} timeline"
        checks = []
        for i, c in enumerate(_need(t, "checks", list, w)):
            wc = f"{w} check {i + 1}"
            kind = _need(c, "kind", str, wc)
            if kind not in TIMELINE_CHECKS:
                raise SpecError(f"{wc}: no check {kind!r} ({', '.join(TIMELINE_CHECKS)})")
            checks.append(TimelineCheck(kind, int(_need(c, "step", int, wc)), _need(c, "meaning", str, wc),
                                        float(c.get("tolerance", 0.15))))
        return TimelineSpec(_need(d, "what", str, where), _need(t, "file", str, w), t.get("baseline", ""),
                            list(t.get("args", [])), int(_need(t, "step", int, w)), checks)
    steps = {}
    for k, s in _need(d, "steps", dict, where).items():
        if not k.isdigit() or not isinstance(s, dict):
            raise SpecError(f"{where}: step '{k}' is not a number with an object")
        steps[int(k)] = StepSpec(int(k), _need(s, "kernel", str, f"{where} step {k}"),
                                 _need(s, "target", str, f"{where} step {k}"), s.get("note", ""))
    counters = []
    for i, c in enumerate(_need(d, "counters", list, where)):
        w = f"{where} counter {i + 1}"
        if "metric" in c:
            metrics = (_need(c, "metric", str, w),)
        else:
            r = _need(c, "ratio", list, w)
            if len(r) != 2 or not all(isinstance(m, str) for m in r):
                raise SpecError(f"{w}: 'ratio' wants [numerator, denominator]")
            metrics = tuple(r)
        worse = _need(c, "worse", str, w)
        if worse not in ("higher", "lower"):
            raise SpecError(f"{w}: 'worse' is higher or lower, not {worse!r}")
        step = int(_need(c, "step", int, w))
        only = c.get("steps")
        counters.append(Counter(_need(c, "label", str, w), metrics, worse, float(_need(c, "tolerance", (int, float), w)),
                                _need(c, "meaning", str, w), step, float(c.get("scale", 1.0)),
                                int(c.get("digits", 3)), float(c.get("floor", 0.0)),
                                tuple(only) if only is not None else None))
    stalls = None
    if "stalls" in d:
        st = _need(d, "stalls", dict, where)
        w = f"{where} stalls"
        meanings = {}
        for reason, m in st.get("meanings", {}).items():
            if reason not in STALL_REASONS:
                raise SpecError(f"{w}: no stall reason {reason!r} (ncu's: {', '.join(STALL_REASONS)})")
            meanings[reason] = (_need(m, "meaning", str, f"{w} {reason}"), int(_need(m, "step", int, f"{w} {reason}")))
        stalls = Stalls(tuple(_need(st, "steps", list, w)), int(st.get("top", 3)), float(st.get("tolerance", 0.5)),
                        float(st.get("floor", 0.5)), meanings)
    return Spec(_need(d, "what", str, where), steps, counters, stalls)


def _number(text: str) -> Optional[float]:
    try:
        return float(text.replace(",", ""))    # ncu may group digits: "1,234"
    except ValueError:
        return None


def parse_ncu_csv(text: str) -> list:
    """ncu's raw page (--csv --page raw --print-units base): one {"kernel", "values"} per
    profiled launch, in launch order. Lines before the header (==PROF== ...) are skipped; the
    line after the header holds units."""
    lines = text.splitlines()
    start = next((i for i, l in enumerate(lines) if l.startswith('"ID"')), None)
    if start is None:
        return []
    rows = list(csv.reader(io.StringIO("\n".join(l for l in lines[start:] if l.startswith('"')))))
    header, body = rows[0], rows[2:]
    out = []
    for r in body:
        if len(r) != len(header):
            continue
        fields = dict(zip(header, r))
        values = {k: v for k, v in ((k, _number(x)) for k, x in fields.items() if "__" in k) if v is not None}
        out.append({"kernel": fields.get("Kernel Name", ""), "values": values})
    return out


def launch_of(launches: list, kernel: str) -> Optional[dict]:
    """The first launch whose name holds `kernel` (ncu shows namespaces and arguments)."""
    return next((k for k in launches if kernel in k["kernel"]), None)


@dataclass
class Row:
    label: str
    yours: Optional[float]
    reference: Optional[float]
    differs: bool
    sentence: str                       # "" where it does not differ
    digits: int = 3


def compare(counters: list, yours: dict, reference: dict, chapter: str) -> list:
    """One row per counter: both values, and where yours is worse past the tolerance, what
    that means and which step's hints address it."""
    rows = []
    for c in counters:
        y, r = c.value(yours), c.value(reference)
        differs = False
        if y is not None and r is not None:
            differs = _worse(y, r, c.worse, c.tolerance, c.floor)
        sentence = f"{c.meaning} (step {c.step}; ./lab hint {chapter} --step {c.step})" if differs else ""
        rows.append(Row(c.label, y, r, differs, sentence, c.digits))
    return rows


def _worse(y: float, r: float, worse: str, tolerance: float, floor: float) -> bool:
    gap = (y - r) if worse == "higher" else (r - y)
    scale = max(abs(r), floor)
    return gap > tolerance * scale if scale > 0 else gap > 0


def stall_rows(stalls: Optional[Stalls], yours: dict, reference: dict, chapter: str) -> list:
    """The top reasons warps of either kernel waited, as rows; one with a meaning in the spec
    is named where yours waits on it more than the solution's past the tolerance."""
    if stalls is None:
        return []
    got = [(r, yours.get(stall_metric(r)), reference.get(stall_metric(r))) for r in STALL_REASONS]
    got = [g for g in got if g[1] is not None or g[2] is not None]
    got.sort(key=lambda g: -max(g[1] or 0.0, g[2] or 0.0))
    rows = []
    for reason, y, r in got[:stalls.top]:
        differs, sentence = False, ""
        if reason in stalls.meanings and y is not None and r is not None:
            differs = _worse(y, r, "higher", stalls.tolerance, stalls.floor)
            meaning, step = stalls.meanings[reason]
            sentence = f"{meaning} (step {step}; ./lab hint {chapter} --step {step})" if differs else ""
        rows.append(Row(f"stalled on {reason} (warps per issue)", y, r, differs, sentence, 3))
    return rows


def launch_line(yours: dict, reference: dict, mine: str = "yours", theirs: str = "solution") -> str:
    """The two launches in one line (grid, block, registers), or "" where ncu gave none."""
    def one(v: dict) -> Optional[str]:
        grid, block, regs = (v.get(k) for k in LAUNCH[:3])
        if grid is None or block is None:
            return None
        sms = v.get("launch__sm_count")
        per_sm = f" ({grid / sms:.3g} a SM)" if sms else ""
        blocks = "1 block" if grid == 1 else f"{grid:,.0f} blocks"
        return f"{blocks}{per_sm} of {block:,.0f} threads" + (f", {regs:.0f} registers" if regs else "")
    y, r = one(yours), one(reference)
    if y is None or r is None:
        return ""
    return f"  launch: {mine} {y}; {theirs} {r}" if y != r else f"  launch: both {y}"


def slower_unexplained(rows: list, duration: tuple, chapter: str, threshold: float = 1.5) -> str:
    """A sentence where your kernel is much slower yet no row differs: the counters this
    chapter reads do not see why, so say where to look instead."""
    ratio = duration[2]
    if ratio is None or ratio < threshold or any(r.differs for r in rows):
        return ""
    return (f"your kernel took {ratio:.2f}× the solution's time, yet no counter above differs past its "
            f"tolerance: compare the launch line (how many blocks keep the SMs busy) and run ./lab check "
            f"{chapter}, whose speed test names the step")


def duration_row(yours: dict, reference: dict) -> tuple:
    """(your µs, the solution's µs, yours over the solution's) from one profile each."""
    y, r = yours.get(DURATION), reference.get(DURATION)
    if y is None or r is None or r <= 0:
        return None, None, None
    return y / 1000.0, r / 1000.0, y / r


def _fmt(v: Optional[float], digits: int) -> str:
    if v is None:
        return "-"
    if abs(v) >= 10 ** 6:
        return f"{v:,.0f}"
    return f"{v:.{digits}g}" if abs(v) < 1000 else f"{v:,.0f}"


def table_lines(rows: list, duration: tuple, mine: str = "yours", theirs: str = "solution") -> list:
    """The table a learner reads: duration first, then each counter, then the sentences."""
    width = max([len(r.label) for r in rows] + [len("duration (µs)")])
    out = [f"  {'counter':<{width}}  {mine:>12}  {theirs:>12}"]
    y, r, ratio = duration
    if ratio is not None:
        out.append(f"  {'duration (µs)':<{width}}  {_fmt(y, 4):>12}  {_fmt(r, 4):>12}  {ratio:.2f}× the {theirs}'s time")
    for row in rows:
        mark = "  ← differs" if row.differs else ""
        out.append(f"  {row.label:<{width}}  {_fmt(row.yours, row.digits):>12}  {_fmt(row.reference, row.digits):>12}{mark}")
    said = [r for r in rows if r.differs]
    if said:
        out.append("")
        out += [f"  {r.label}: {r.sentence}" for r in said]
    return out


def compare_runs(now: dict, before: dict) -> list:
    """Lines comparing two saved profiles of the same step: each counter of yours then and
    now. `now` and `before` are the JSON ./lab profile writes."""
    was = {r["label"]: r for r in before.get("rows", [])}
    out = [f"  {'counter':<40}  {'before':>12}  {'now':>12}"]
    pairs = [("duration (µs)", before.get("duration_us"), now.get("duration_us"))]
    pairs += [(r["label"], was.get(r["label"], {}).get("yours"), r.get("yours")) for r in now.get("rows", [])]
    for label, b, n in pairs:
        change = f"  {n / b:.2f}×" if b and n is not None else ""
        out.append(f"  {label:<40}  {_fmt(b, 4):>12}  {_fmt(n, 4):>12}{change}")
    return out
