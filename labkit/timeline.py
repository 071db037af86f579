"""A CUPTI trace (the chapters' timeline_*.csv: type,name,kind,src,dst,bytes,stream,start_ns,
end_ns,count) as a timeline in the terminal: one row per engine or per stream, and the figures
that say whether the work overlapped — the same overlap fractions the chapters' programs print
(cml::overlap_fraction: time two sets of intervals share, over the span of both) — the gaps
where nothing ran, the copies and where they read from, and unified memory's migrations and
page faults. Pure: tests/cpu/test_profile.py reads recorded traces."""

from __future__ import annotations

import bisect
import csv
import io
from dataclasses import dataclass
from typing import Optional


@dataclass
class Activity:
    type: str          # copy, kernel, memset, unified
    kind: str          # HtoD, DtoH, DtoD... for copies; bytes_HtoD, gpu_page_fault... for unified
    # (type "host": a CUDA call that kept the host waiting, `name` the call)
    stream: str
    start: int         # ns
    end: int
    src: str = ""      # a copy's memory: pageable, pinned, device, managed...
    dst: str = ""
    bytes: int = 0     # a copy's or a migration's bytes
    count: int = 0     # a unified record's faults (or events)
    name: str = ""     # a kernel's or a host call's name


def _int(text) -> int:
    try:
        return int(text)
    except (TypeError, ValueError):
        return 0


def parse_trace(text: str) -> list:
    """The timed records of a trace. Unified memory's records may be instants (a page fault
    group): they are kept with end == start; other records need a length."""
    out = []
    for r in csv.DictReader(io.StringIO(text)):
        try:
            start, end = int(r["start_ns"]), int(r["end_ns"])
        except (KeyError, TypeError, ValueError):
            continue
        kind = r.get("type", "")
        if end > start or (kind == "unified" and end == start):
            out.append(Activity(kind, r.get("kind", ""), r.get("stream", ""), start, end, r.get("src", "") or "",
                                r.get("dst", "") or "", _int(r.get("bytes")), _int(r.get("count")),
                                r.get("name", "") or ""))
    return out


def merged(intervals: list) -> list:
    """The union of (start, end) intervals, sorted and disjoint."""
    out = []
    for s, e in sorted(intervals):
        if out and s <= out[-1][1]:
            out[-1] = (out[-1][0], max(out[-1][1], e))
        else:
            out.append((s, e))
    return out


def length(intervals: list) -> int:
    return sum(e - s for s, e in merged(intervals))


def shared(a: list, b: list) -> int:
    """How long the union of a and the union of b run at the same time."""
    total, ua, ub, i, j = 0, merged(a), merged(b), 0, 0
    while i < len(ua) and j < len(ub):
        s, e = max(ua[i][0], ub[j][0]), min(ua[i][1], ub[j][1])
        total += max(0, e - s)
        if ua[i][1] < ub[j][1]:
            i += 1
        else:
            j += 1
    return total


def overlap_fraction(a: list, b: list) -> float:
    whole = a + b
    if not whole:
        return 0.0
    span = max(e for _, e in whole) - min(s for s, _ in whole)
    return shared(a, b) / span if span > 0 else 0.0


HOST_LANE = "host waiting in CUDA calls"   # the calls that kept a host thread 20 µs or more
UNIFIED_LANES = {"bytes_HtoD": "migrations host→device", "bytes_DtoH": "migrations device→host",
                 "gpu_page_fault": "GPU page faults", "cpu_page_fault": "CPU page faults"}


def lane_of(a: Activity) -> str:
    if a.type == "copy":
        return {"HtoD": "copies host→device", "DtoH": "copies device→host"}.get(a.kind, f"copies {a.kind}")
    if a.type == "unified":
        return UNIFIED_LANES.get(a.kind, f"unified {a.kind}")
    if a.type == "host":
        return HOST_LANE
    return {"kernel": "kernels", "memset": "memsets"}.get(a.type, a.type)


@dataclass
class Summary:
    span_us: float
    copy_kernel: float       # a copy and a kernel in flight together, of the span
    in_out: float            # copies in both directions together, of the span
    idle_us: float           # nothing running
    largest_gap_us: float
    htod_copies: int = 0     # host→device copies
    dtoh_copies: int = 0
    pageable_copies: int = 0  # copies from or to pageable host memory (staged by the driver)
    kernels: int = 0
    gpu_faults: int = 0      # unified memory: page faults the GPU took
    migrated_bytes: int = 0  # unified memory: bytes migrated either way
    host_waited_us: float = 0.0  # host threads inside CUDA calls of 20 µs or more (any thread)
    host_calls: str = ""     # which calls, the longest in all first: "cudaMemcpy 812 µs, ..."
    # unified memory: the share of the bytes migrated host→device whose migration began while a
    # host thread was inside cudaLaunchKernel (a launch that moved the data itself)
    launch_htod_share: float = 0.0

    def lines(self) -> list:
        out = [f"span {self.span_us:,.0f} µs; a copy and a kernel in flight together {100 * self.copy_kernel:.0f}% "
               f"of it, copies both ways together {100 * self.in_out:.0f}%; nothing running {self.idle_us:,.0f} µs "
               f"(largest gap {self.largest_gap_us:,.0f} µs)"]
        out.append(f"{self.htod_copies} host→device and {self.dtoh_copies} device→host copies "
                   f"({self.pageable_copies} with pageable memory), {self.kernels} kernels")
        if self.host_waited_us:
            out.append(f"the host waited {self.host_waited_us:,.0f} µs inside CUDA calls: {self.host_calls}")
        if self.gpu_faults or self.migrated_bytes:
            out.append(f"unified memory: {self.gpu_faults} GPU page faults, {self.migrated_bytes / 2**20:,.1f} MiB "
                       f"migrated")
        return out


def host_calls(host: list, top: int = 3) -> str:
    """The calls the host waited in, the longest in all first, with their total µs."""
    total = {}
    for a in host:
        total[a.name] = total.get(a.name, 0) + (a.end - a.start)
    ranked = sorted(total.items(), key=lambda kv: -kv[1])[:top]
    return ", ".join(f"{name} {ns / 1000:,.0f} µs" for name, ns in ranked)


def summarize(acts: list) -> Optional[Summary]:
    host = [a for a in acts if a.type == "host"]
    acts = [a for a in acts if a.type != "host"]   # the GPU's timeline: span, gaps, overlap
    if not acts:
        return None
    iv = lambda pred: [(a.start, a.end) for a in acts if pred(a)]  # noqa: E731
    h2d = iv(lambda a: a.type == "copy" and a.kind == "HtoD")
    d2h = iv(lambda a: a.type == "copy" and a.kind == "DtoH")
    copies = iv(lambda a: a.type == "copy")
    kernels = iv(lambda a: a.type == "kernel")
    allv = merged([(a.start, a.end) for a in acts])
    span = allv[-1][1] - allv[0][0]
    gaps = [allv[k + 1][0] - allv[k][1] for k in range(len(allv) - 1)]
    count = lambda pred: sum(1 for a in acts if pred(a))  # noqa: E731
    return Summary(span / 1000.0, overlap_fraction(copies, kernels), overlap_fraction(h2d, d2h),
                   sum(gaps) / 1000.0, max(gaps, default=0) / 1000.0,
                   count(lambda a: a.type == "copy" and a.kind == "HtoD"),
                   count(lambda a: a.type == "copy" and a.kind == "DtoH"),
                   count(lambda a: a.type == "copy" and "pageable" in (a.src, a.dst)),
                   count(lambda a: a.type == "kernel"),
                   sum(a.count for a in acts if a.type == "unified" and a.kind == "gpu_page_fault"),
                   sum(a.bytes for a in acts if a.type == "unified" and a.kind.startswith("bytes_")),
                   length([(a.start, a.end) for a in host]) / 1000.0, host_calls(host),
                   launch_migrated_share(host, acts))


def launch_migrated_share(host: list, acts: list) -> float:
    """Of the bytes unified memory moved host→device, the share whose migration began while a
    host thread was inside cudaLaunchKernel: near 1 when launches moved the data themselves
    (no prefetch before them), well below when a prefetch moved it."""
    launches = merged([(a.start, a.end) for a in host if a.name == "cudaLaunchKernel"])
    moved = [a for a in acts if a.type == "unified" and a.kind == "bytes_HtoD"]
    total = sum(a.bytes for a in moved)
    if not total or not launches:
        return 0.0
    starts = [lo for lo, _ in launches]
    inside = 0
    for a in moved:
        k = bisect.bisect_right(starts, a.start) - 1
        if k >= 0 and a.start <= launches[k][1]:
            inside += a.bytes
    return inside / total


SYMBOL = {"copies host→device": ">", "copies device→host": "<", "kernels": "K", "memsets": "m",
          "migrations host→device": "}", "migrations device→host": "{", "GPU page faults": "!",
          "CPU page faults": "?", HOST_LANE: "H"}


def common_span(traces: list) -> float:
    """One scale for several traces drawn one above the other: the longest of them, each
    measured from its own first activity (ns)."""
    return max((max(a.end for a in t) - min(a.start for a in t) for t in traces if t), default=0)


def render(acts: list, width: int = 64, by: str = "engine", span: Optional[tuple] = None) -> list:
    """One row per lane (engine, or stream with by="stream"): a cell is marked where anything of
    the lane ran during that cell's slice of the span. `span` (start, end) lets two traces be
    drawn on one scale."""
    if not acts:
        return ["(the trace is empty)"]
    t0, t1 = span or (min(a.start for a in acts), max(a.end for a in acts))
    scale = (t1 - t0) / width if t1 > t0 else 1.0
    lanes = {}
    for a in acts:
        key = lane_of(a) if by == "engine" else f"stream {a.stream}"
        lanes.setdefault(key, []).append(a)
    order = sorted(lanes, key=lambda k: (list(SYMBOL).index(k) if k in SYMBOL else len(SYMBOL), k))
    label_w = max(len(k) for k in order)
    out = []
    for key in order:
        cells = [" "] * width
        for a in lanes[key]:
            first = max(0, int((a.start - t0) / scale))
            last = min(width - 1, max(first, int((a.end - 1 - t0) / scale)))
            mark = SYMBOL.get(lane_of(a), "#")
            for c in range(first, last + 1):
                cells[c] = mark
        out.append(f"  {key:<{label_w}} |{''.join(cells)}|")
    out.append(f"  {'':<{label_w}}  0{'':<{width - 12}}{(t1 - t0) / 1000:>10,.0f} µs")
    return out
