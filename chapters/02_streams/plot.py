#!/usr/bin/env python3
"""Chapter 02's figures from the CSV files `./lab bench 02` wrote (matplotlib).

    python3 chapters/02_streams/plot.py DIR     # reads DIR/*.csv, writes DIR/*.png

shmoo.png: speed-up against cycles with the classic and contention-aware bounds, like the
CUDA Handbook's figures 6-7 and 6-8; timeline.png: a Gantt chart of one sequential and
one staged run (one row per engine and stream), from the CUPTI trace; breakers.png: the
timeline of each breaker; chunks.png (--mode=chunks): the measured speed-up against the
chunk count beside the pipeline formula's; layouts.png (--mode=kernel-stream): the
timeline of each stream layout.
"""
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the checkout: labkit is importable
from labkit.plotting import device_label, read_csv  # noqa: E402  (sets matplotlib's backend)

import matplotlib.pyplot as plt  # noqa: E402

COLOURS = {"HtoD": "tab:blue", "kernel": "tab:green", "DtoH": "tab:orange", "memset": "tab:grey"}


read = read_csv


def plot_shmoo(folder, title):
    rows = read(folder / "shmoo.csv")
    x = [int(r["cycles"]) for r in rows]
    fig, ax = plt.subplots(figsize=(8, 4.5))
    ax.plot(x, [float(r["speed-up"]) for r in rows], marker="o", label="staged speed-up (measured)")
    ax.plot(x, [float(r["bound"]) for r in rows], linestyle="--", label="bound: sequential / longest phase")
    ax.plot(x, [float(r["contention bound"]) for r in rows], linestyle=":",
            label="bound with both copy directions sharing the link")
    ax.axhline(1.0, color="grey", linewidth=0.8)
    ax.set_xlabel("cycles (adds per element in AddKernel)")
    ax.set_ylabel("speed-up over sequential")
    ax.set_title(f"Copy/kernel overlap: {title}", fontsize=9)
    ax.legend(fontsize=8)
    ax.grid(True, alpha=0.3)
    fig.tight_layout()
    fig.savefig(folder / "shmoo.png", dpi=120)


def plot_chunks(folder, title):
    rows = read(folder / "chunks.csv")
    x = [int(r["chunks"]) for r in rows]
    fig, ax = plt.subplots(figsize=(8, 4.5))
    ax.plot(x, [float(r["speed-up"]) for r in rows], marker="o", label="measured (equal chunks)")
    ax.plot(x, [float(r["formula"]) for r in rows], linestyle="--", label="formula: S / (W + (S - W) / C)")
    ax.plot(x, [float(r["formula, link shared"]) for r in rows], linestyle=":",
            label="formula, both copy directions sharing the link")
    ax.plot(x, [float(r["formula, link shared + chunk cost"]) for r in rows], linestyle="-.",
            label="the same, plus each chunk's fixed cost")
    ax.axhline(1.0, color="grey", linewidth=0.8)
    ax.set_xlabel("chunks C")
    ax.set_ylabel("speed-up over sequential")
    ax.set_title(f"The pipeline formula against the chunk count: {title}", fontsize=9)
    ax.legend(fontsize=8)
    ax.grid(True, alpha=0.3)
    fig.tight_layout()
    fig.savefig(folder / "chunks.png", dpi=120)


def lanes(rows):
    """Timeline rows -> {lane: [(start_ms, length_ms, colour)]}; a lane per engine and stream."""
    out = {}
    for r in rows:
        if not r["start_ns"]:
            continue
        kind = "kernel" if r["type"] == "kernel" else r["kind"] if r["type"] == "copy" else r["type"]
        lane = f"{kind} s{r['stream']}"
        start, end = int(r["start_ns"]) / 1e6, int(r["end_ns"]) / 1e6
        out.setdefault(lane, []).append((start, max(end - start, 1e-3), COLOURS.get(kind, "tab:purple")))
    order = {"HtoD": 0, "kernel": 1, "DtoH": 2}
    return dict(sorted(out.items(), key=lambda kv: (order.get(kv[0].split()[0], 3), int(kv[0].split("s")[-1] or 0))))


def plot_timelines(folder, title, files, out_name):
    present = [(name, folder / f) for name, f in files if (folder / f).exists()]
    if not present:
        return None
    fig, axes = plt.subplots(len(present), 1, figsize=(11, 1.2 + 0.9 * len(present) + 0.12 * sum(
        len(lanes(read(p))) for _, p in present)), squeeze=False)
    end = max((s + l for _, p in present for bars in lanes(read(p)).values() for s, l, _ in bars), default=1)
    for ax, (name, path) in zip(axes[:, 0], present):
        ls = lanes(read(path))
        for i, (lane, bars) in enumerate(ls.items()):
            ax.broken_barh([(s, l) for s, l, _ in bars], (i - 0.4, 0.8), facecolors=[c for _, _, c in bars])
        ax.set_yticks(range(len(ls)))
        ax.set_yticklabels(list(ls.keys()), fontsize=6)
        ax.set_xlim(0, end * 1.02)
        ax.invert_yaxis()
        ax.set_title(name, fontsize=8, loc="left")
    axes[-1, 0].set_xlabel("ms since the first operation")
    fig.suptitle(f"CUPTI timeline: {title}", fontsize=9)
    fig.tight_layout()
    fig.savefig(folder / out_name, dpi=110)
    return folder / out_name


def main(argv):
    if len(argv) != 2:
        print("usage: plot.py DIR", file=sys.stderr)
        return 2
    folder = Path(argv[1])
    title = device_label(folder, engines=True)
    wrote = []
    if (folder / "shmoo.csv").exists():
        plot_shmoo(folder, title)
        wrote.append(folder / "shmoo.png")
    t = plot_timelines(folder, title, [("sequential", "timeline_sequential.csv"), ("staged", "timeline_staged.csv")],
                       "timeline.png")
    if t:
        wrote.append(t)
    if (folder / "chunks.csv").exists():
        plot_chunks(folder, title)
        wrote.append(folder / "chunks.png")
    layouts = [(name, f"layout_{name}.csv") for name in ("chunk-streams", "kernel-stream", "engine-streams")]
    t = plot_timelines(folder, title, layouts, "layouts.png")
    if t:
        wrote.append(t)
    breakers = sorted(p.name for p in folder.glob("timeline_*.csv")
                      if p.name not in ("timeline_sequential.csv", "timeline_staged.csv"))
    t = plot_timelines(folder, title, [(b[len("timeline_"):-4], b) for b in breakers], "breakers.png")
    if t:
        wrote.append(t)
    print("\n".join(str(w) for w in wrote) if wrote else f"no CSV files in {folder}")
    return 0 if wrote else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv))
