"""./lab profile's pure part: a chapter's profile spec (chapters/NN_topic/profile.json), ncu's
raw CSV page, and the rules that turn a pair of counter sets (yours, the solution's, same
kernel role, same input) into rows and sentences. No GPU, no files: tests/cpu/test_profile.py.

A spec:
  {"what": "...", "steps": {"K": {"kernel": NAME, "target": CML_TARGET, "note": ...}},
   "counters": [{"label": ..., "metric": M | "ratio": [NUM, DEN], "scale": S, "digits": D,
                 "worse": "higher" | "lower", "tolerance": T, "meaning": ..., "step": K,
                 "steps": [K, ...]}]}
A counter differs where yours is worse than the solution's by more than `tolerance` (a
fraction of the solution's value, or, where that is 0, of `floor`); its sentence is
`meaning`, pointing at `step`'s hints.
"""

from __future__ import annotations

import csv
import io
import json
from dataclasses import dataclass, field
from typing import Optional

DURATION = "gpu__time_duration.sum"     # ns: every profile reads it, beside the chapter's counters


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
    floor: float = 0.0                  # the scale of "a little" where the solution's value is 0
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
class Spec:
    what: str
    steps: dict                         # step number -> StepSpec
    counters: list = field(default_factory=list)

    def counters_of(self, step: int) -> list:
        return [c for c in self.counters if c.steps is None or step in c.steps]

    def metrics_of(self, step: int) -> list:
        """Every ncu metric the step's counters read, duration first, each once."""
        out = [DURATION]
        for c in self.counters_of(step):
            out += [m for m in c.metrics if m not in out]
        return out


@dataclass
class TimelineSpec:
    """A transfer chapter's profile: its program run with --out, the CUPTI trace it writes."""
    what: str
    file: str                           # the trace of the learner's pipeline (and the solution's)
    baseline: str                       # a trace drawn first for scale (the sequential run), or ""
    args: list                          # the program's arguments
    step: int                           # where overlap is taught
    tolerance: float                    # overlap below the solution's by more than this is named
    meaning: str


def timeline_findings(yours, reference, spec: TimelineSpec, chapter: str) -> list:
    """Sentences for a learner's trace summary against the solution's (timeline.Summary)."""
    out = []
    hint = f"(step {spec.step}; ./lab hint {chapter} --step {spec.step})"
    if yours.copy_kernel < reference.copy_kernel - spec.tolerance:
        out.append(f"copies and kernels overlapped {100 * yours.copy_kernel:.0f}% of your span against "
                   f"{100 * reference.copy_kernel:.0f}% of the solution's: {spec.meaning} {hint}")
    if yours.idle_us > 2 * reference.idle_us + 50:
        out.append(f"the GPU sat idle {yours.idle_us:,.0f} µs between your operations against "
                   f"{reference.idle_us:,.0f}: something in your loop waits for the GPU, or allocates, "
                   f"between chunks {hint}")
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
        return TimelineSpec(_need(d, "what", str, where), _need(t, "file", str, w), t.get("baseline", ""),
                            list(t.get("args", [])), int(_need(t, "step", int, w)),
                            float(_need(t, "tolerance", (int, float), w)), _need(t, "meaning", str, w))
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
    return Spec(_need(d, "what", str, where), steps, counters)


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
            gap = (y - r) if c.worse == "higher" else (r - y)
            scale = abs(r) if r else c.floor
            differs = gap > c.tolerance * scale if scale > 0 else gap > 0
        sentence = f"{c.meaning} (step {c.step}; ./lab hint {chapter} --step {c.step})" if differs else ""
        rows.append(Row(c.label, y, r, differs, sentence, c.digits))
    return rows


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
