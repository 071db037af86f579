#!/usr/bin/env python3
"""Chapter 07's figures from the CSV files `./lab bench 07` wrote (matplotlib).

    ./lab bench 07 --solution -- --mode=shmoo       # shmoo.csv
    ./lab bench 07 --solution -- --mode=variants    # variants.csv
    python3 chapters/07_memcpy_async/plot.py DIR    # reads DIR/*.csv, writes DIR/*.png

shmoo.png: one panel per blocks-per-SM; in each, every variant's speed as a fraction of the
read-only kernel against the compute per word, one line per variant and stage count: where
asynchronous copies pay (few blocks per SM, little compute) and where they do not.
variants.png: one configuration's variants as GB/s, beside the read-only kernel and
cudaMemcpy.
"""
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "tools"))
from plotting import number, plot_main, read_csv  # noqa: E402  (sets matplotlib's backend)

import matplotlib.pyplot as plt  # noqa: E402


def label_of(row):
    return row["variant"] + (f" x{row['stages']}" if row["stages"] not in ("-", "") else "")


def shmoo(folder, label):
    rows = read_csv(folder / "shmoo.csv")
    per_sm = sorted({int(r["blocks per SM"]) for r in rows})
    computes = sorted({int(r["compute"]) for r in rows})
    lines = []
    for r in rows:
        if label_of(r) not in lines:
            lines.append(label_of(r))
    fig, axes = plt.subplots(1, len(per_sm), figsize=(4 * len(per_sm), 4.5), sharey=True, squeeze=False)
    for ax, bps in zip(axes[0], per_sm):
        for name in lines:
            pts = {int(r["compute"]): number(r["of read-only"]) for r in rows
                   if label_of(r) == name and int(r["blocks per SM"]) == bps}
            xs = [c for c in computes if c in pts]
            style = "--" if name.startswith(("sync", "read-only")) else "-"
            ax.plot(range(len(xs)), [pts[c] for c in xs], style, marker="o", markersize=3, label=name)
        ax.set_xticks(range(len(computes)))
        ax.set_xticklabels([str(c) for c in computes])
        ax.set_xlabel("multiply-adds per word")
        ax.set_title(f"{bps} block(s) per SM", fontsize=9)
        ax.grid(True, alpha=0.3)
    axes[0][0].set_ylabel("speed, fraction of the read-only kernel")
    axes[0][-1].legend(fontsize=6, loc="lower right")
    fig.suptitle(f"Global -> shared: registers, cg, barrier, pipeline stages, 16-byte copies: {label}", fontsize=9)
    fig.tight_layout()
    fig.savefig(folder / "shmoo.png", dpi=120)
    return folder / "shmoo.png"


def variants(folder, label):
    rows = read_csv(folder / "variants.csv")
    y = range(len(rows))
    fig, ax = plt.subplots(figsize=(8, 0.4 * len(rows) + 1.5))
    ax.barh(list(y), [number(r["GB/s"]) for r in rows])
    ax.set_yticks(list(y))
    ax.set_yticklabels([label_of(r) for r in rows], fontsize=8)
    ax.invert_yaxis()
    ax.set_xlabel("GB/s (cudaMemcpy: bytes read + written; the others: bytes read)")
    ax.set_title(f"Variants: {label}", fontsize=9)
    ax.grid(True, axis="x", alpha=0.3)
    fig.tight_layout()
    fig.savefig(folder / "variants.png", dpi=120)
    return folder / "variants.png"


def main(argv):
    return plot_main(argv, [("shmoo.csv", shmoo), ("variants.csv", variants)])


if __name__ == "__main__":
    sys.exit(main(sys.argv))
