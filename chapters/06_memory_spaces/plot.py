#!/usr/bin/env python3
"""Chapter 06's figures from the CSV files `./lab bench 06` wrote (matplotlib).

    ./lab bench 06 --solution                         # local, spills, constant, texture .csv
    python3 chapters/06_memory_spaces/plot.py DIR     # reads DIR/*.csv, writes DIR/*.png

One figure per table, each kernel's speed relative to the table's first row, the slow way
(1 = as fast as it): local.png, step 1's register window against the ring buffer in local
memory; spills.png, one sort with all the registers it wants, capped into spills to local
and to shared memory; constant.png, step 2's reads of M (divergent constant, one address
per warp, global, __ldg); texture.png, step 3's rotation by hand and through the texture.
Without matplotlib it says so and exits 77 (./lab bench installs it where it can).
"""
import sys
from functools import partial
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the checkout: labkit is importable
try:
    from labkit.plotting import number, plot_main, read_csv  # noqa: E402  (sets matplotlib's backend)
    import matplotlib.pyplot as plt  # noqa: E402
except ModuleNotFoundError as e:
    if e.name != "matplotlib":
        raise
    plt = None

# (CSV file, the column that holds the speed relative to the first row, the figure's title)
TABLES = [
    ("local.csv", "vs ring", "Step 1: the filter's window in local memory and in registers"),
    ("spills.csv", "vs registers", "Register spills: one sort, all in registers or capped to 32 registers"),
    ("constant.csv", "vs divergent", "Step 2: reading the mix's matrix"),
    ("texture.csv", "vs plain loads", "Step 3: the rotation by hand and through the texture"),
]


def speed(folder, label, name, column, title):
    rows = read_csv(folder / name)
    values = [number(r[column]) for r in rows]
    y = range(len(rows))
    fig, ax = plt.subplots(figsize=(8, 0.45 * len(rows) + 1.5))
    ax.barh(list(y), values)
    for i, v in zip(y, values):
        ax.text(v, i, f" {v:.2f}", va="center", fontsize=8)
    ax.axvline(1.0, color="grey", linewidth=0.8)
    ax.set_yticks(list(y))
    ax.set_yticklabels([r["kernel"] for r in rows], fontsize=8)
    ax.invert_yaxis()
    ax.set_xlabel(f"speed relative to the first row ({column}; higher is faster)")
    ax.set_title(f"{title}\n{label}", fontsize=9)
    ax.grid(True, axis="x", alpha=0.3)
    fig.tight_layout()
    png = folder / name.replace(".csv", ".png")
    fig.savefig(png, dpi=120)
    plt.close(fig)
    return png


def main(argv):
    if plt is None:
        print("matplotlib is not installed: no figures (pip install matplotlib; ./lab bench 06 installs it where "
              "it can)", file=sys.stderr)
        return 77
    return plot_main(argv, [(name, partial(speed, name=name, column=column, title=title))
                            for name, column, title in TABLES])


if __name__ == "__main__":
    sys.exit(main(sys.argv))
