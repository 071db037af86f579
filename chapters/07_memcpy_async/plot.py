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

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the checkout: labkit is importable
from labkit.plotting import number, plot_main, read_csv  # noqa: E402  (sets matplotlib's backend)

# Chapter 08's plot.py draws its figures with label_of, line_panels and barh too: its CSV
# files have these columns, and its figures are these figures over its own pipelines.


def label_of(row):
    return row["variant"] + (f" x{row['stages']}" if row["stages"] not in ("-", "") else "")


def line_panels(path, panels, panel_title, names, points, xs, xlabel, dashed, title, log2_x=False):
    """One panel per value of `panels`, titled panel_title(value), all sharing the y axis:
    speed as a fraction of the read-only kernel. In each, one line per name, through
    points(name, panel) -> {x: speed} at the xs it has (evenly spaced, or on a log2 axis),
    dashed where the name starts with one of `dashed` (the references). Writes `path`."""
    import matplotlib.pyplot as plt  # here: without matplotlib, plot_main says so in one line

    fig, axes = plt.subplots(1, len(panels), figsize=(4 * len(panels), 4.5), sharey=True, squeeze=False)
    for ax, panel in zip(axes[0], panels):
        for name in names:
            pts = points(name, panel)
            have = [x for x in xs if x in pts]
            ax.plot(have if log2_x else [xs.index(x) for x in have], [pts[x] for x in have],
                    "--" if name.startswith(dashed) else "-", marker="o", markersize=3, label=name)
        if log2_x:
            ax.set_xscale("log", base=2)
        ax.set_xticks(xs if log2_x else range(len(xs)))
        ax.set_xticklabels([str(x) for x in xs])
        ax.set_xlabel(xlabel)
        ax.set_title(panel_title(panel), fontsize=9)
        ax.grid(True, alpha=0.3)
    axes[0][0].set_ylabel("speed, fraction of the read-only kernel")
    axes[0][-1].legend(fontsize=6, loc="lower right")
    fig.suptitle(title, fontsize=9)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path


def barh(path, labels, values, xlabel, title):
    """One horizontal bar per label, top to bottom. Writes `path` (PNG) and returns it."""
    import matplotlib.pyplot as plt

    y = range(len(labels))
    fig, ax = plt.subplots(figsize=(8, 0.4 * len(labels) + 1.5))
    ax.barh(list(y), values)
    ax.set_yticks(list(y))
    ax.set_yticklabels(labels, fontsize=8)
    ax.invert_yaxis()
    ax.set_xlabel(xlabel)
    ax.set_title(title, fontsize=9)
    ax.grid(True, axis="x", alpha=0.3)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path


def shmoo(folder, label):
    rows = read_csv(folder / "shmoo.csv")
    return line_panels(
        folder / "shmoo.png", panels=sorted({int(r["blocks per SM"]) for r in rows}),
        panel_title=lambda bps: f"{bps} block(s) per SM", names=list(dict.fromkeys(label_of(r) for r in rows)),
        points=lambda name, bps: {int(r["compute"]): number(r["of read-only"]) for r in rows
                                  if label_of(r) == name and int(r["blocks per SM"]) == bps},
        xs=sorted({int(r["compute"]) for r in rows}), xlabel="multiply-adds per word", dashed=("sync", "read-only"),
        title=f"Global -> shared: registers, cg, barrier, pipeline stages, 16-byte copies: {label}")


def variants(folder, label):
    rows = read_csv(folder / "variants.csv")
    return barh(folder / "variants.png", [label_of(r) for r in rows], [number(r["GB/s"]) for r in rows],
                "GB/s (cudaMemcpy: bytes read + written; the others: bytes read)", f"Variants: {label}")


def main(argv):
    return plot_main(argv, [("shmoo.csv", shmoo), ("variants.csv", variants)])


if __name__ == "__main__":
    sys.exit(main(sys.argv))
