#!/usr/bin/env python3
"""Chapter 08's figures from the CSV files `./lab bench 08` wrote (matplotlib).

    ./lab bench 08 --solution -- --mode=variants    # variants.csv
    ./lab bench 08 --solution -- --mode=sweep       # sweep.csv
    ./lab bench 08 --solution -- --mode=copy        # copy.csv
    python3 chapters/08_cp_async_ptx/plot.py DIR    # reads DIR/*.csv, writes DIR/*.png

variants.png: each pipeline's speed as a fraction of the read-only kernel and of chapter
07's cuda::pipeline, in one configuration: the PTX pipeline against the library's, and the
bulk and TMA versions against both. sweep.png: one panel per stage count, each pipeline's
speed as a fraction of the read-only kernel against the blocks per SM: where the stages
matter (few blocks per SM) and where they do not. copy.png: the tile copy at each width and
cache level, as a fraction of cudaMemcpy.
"""
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "tools"))
from plotting import number, paired_barh, plot_main, read_csv  # noqa: E402  (sets matplotlib's backend)


def label_of(row):
    return row["variant"] + (f" x{row['stages']}" if row["stages"] not in ("-", "") else "")


def variants(folder, label):
    rows = read_csv(folder / "variants.csv")
    return paired_barh(folder / "variants.png", [label_of(r) for r in rows],
                       [("of read-only", [number(r["of read-only"]) for r in rows]),
                        ("of ch07-pipeline", [number(r["of ch07-pipeline"]) for r in rows])],
                       "speed (GB/s), as a fraction", f"cp.async, bulk and TMA pipelines beside chapter 07's: {label}")


def sweep(folder, label):
    import matplotlib.pyplot as plt  # here: without matplotlib, plot_main says so in one line

    rows = read_csv(folder / "sweep.csv")
    stages = sorted({int(r["stages"]) for r in rows if r["stages"] not in ("-", "")})
    per_sm = sorted({int(r["blocks per SM"]) for r in rows})
    names = []
    for r in rows:
        if r["variant"] not in names and r["variant"] != "read-only":
            names.append(r["variant"])
    fig, axes = plt.subplots(1, len(stages), figsize=(4 * len(stages), 4.5), sharey=True, squeeze=False)
    for ax, st in zip(axes[0], stages):
        for name in names:
            pts = {int(r["blocks per SM"]): number(r["of read-only"]) for r in rows
                   if r["variant"] == name and r["stages"] in (str(st), "-")}
            xs = [b for b in per_sm if b in pts]
            style = "--" if name.startswith(("ch07", "sync")) else "-"
            ax.plot(xs, [pts[b] for b in xs], style, marker="o", markersize=3, label=name)
        ax.set_xscale("log", base=2)
        ax.set_xticks(per_sm)
        ax.set_xticklabels([str(b) for b in per_sm])
        ax.set_xlabel("blocks per SM")
        ax.set_title(f"{st} stage(s)", fontsize=9)
        ax.grid(True, alpha=0.3)
    axes[0][0].set_ylabel("speed, fraction of the read-only kernel")
    axes[0][-1].legend(fontsize=6, loc="lower right")
    fig.suptitle(f"Stages x blocks per SM (dashed: chapter 07 and register staging): {label}", fontsize=9)
    fig.tight_layout()
    fig.savefig(folder / "sweep.png", dpi=120)
    plt.close(fig)
    return folder / "sweep.png"


def copy(folder, label):
    import matplotlib.pyplot as plt

    rows = read_csv(folder / "copy.csv")
    y = range(len(rows))
    fig, ax = plt.subplots(figsize=(8, 0.4 * len(rows) + 1.5))
    ax.barh(list(y), [number(r["of cudaMemcpy"]) for r in rows])
    ax.set_yticks(list(y))
    ax.set_yticklabels([r["copy"] for r in rows], fontsize=8)
    ax.invert_yaxis()
    ax.set_xlabel("speed, fraction of cudaMemcpy device to device (bytes read + written)")
    ax.set_title(f"The tile copy through shared memory: {label}", fontsize=9)
    ax.grid(True, axis="x", alpha=0.3)
    fig.tight_layout()
    fig.savefig(folder / "copy.png", dpi=120)
    plt.close(fig)
    return folder / "copy.png"


def main(argv):
    return plot_main(argv, [("variants.csv", variants), ("sweep.csv", sweep), ("copy.csv", copy)])


if __name__ == "__main__":
    sys.exit(main(sys.argv))
