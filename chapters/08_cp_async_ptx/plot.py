#!/usr/bin/env python3
"""Chapter 08's figures from the CSV files `./lab bench 08` wrote (matplotlib).

    ./lab bench 08 --solution -- --mode=variants    # variants.csv
    ./lab bench 08 --solution -- --mode=sweep       # sweep.csv
    ./lab bench 08 --solution -- --mode=copy        # copy.csv
    python3 chapters/08_cp_async_ptx/plot.py DIR    # reads DIR/*.csv, writes DIR/*.png

variants.png: each pipeline's speed as a fraction of the read-only kernel and of register
staging, in one configuration. sweep.png: one panel per stage count, each pipeline's
speed as a fraction of the read-only kernel against the blocks per SM: where the stages
matter (few blocks per SM) and where they do not. copy.png: the tile copy at each width and
cache level, as a fraction of cudaMemcpy.
"""
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the checkout: labkit is importable
from labkit.plotting import barh, label_of, line_panels, number, paired_barh, plot_main, read_csv  # noqa: E402


def variants(folder, label):
    rows = read_csv(folder / "variants.csv")
    return paired_barh(folder / "variants.png", [label_of(r) for r in rows],
                       [("of read-only", [number(r["of read-only"]) for r in rows]),
                        ("of sync", [number(r["of sync"]) for r in rows])],
                       "speed (GB/s), as a fraction", f"cp.async, bulk and TMA pipelines: {label}")


def sweep(folder, label):
    rows = read_csv(folder / "sweep.csv")
    return line_panels(
        folder / "sweep.png", panels=sorted({int(r["stages"]) for r in rows if r["stages"] not in ("-", "")}),
        panel_title=lambda st: f"{st} stage(s)",
        names=list(dict.fromkeys(r["variant"] for r in rows if r["variant"] != "read-only")),
        points=lambda name, st: {int(r["blocks per SM"]): number(r["of read-only"]) for r in rows
                                 if r["variant"] == name and r["stages"] in (str(st), "-")},
        xs=sorted({int(r["blocks per SM"]) for r in rows}), xlabel="blocks per SM", dashed=("sync",),
        title=f"Stages x blocks per SM (dashed: register staging): {label}", log2_x=True)


def copy(folder, label):
    rows = read_csv(folder / "copy.csv")
    return barh(folder / "copy.png", [r["copy"] for r in rows], [number(r["of cudaMemcpy"]) for r in rows],
                     "speed, fraction of cudaMemcpy device to device (bytes read + written)",
                     f"The tile copy through shared memory: {label}")


def main(argv):
    return plot_main(argv, [("variants.csv", variants), ("sweep.csv", sweep), ("copy.csv", copy)])


if __name__ == "__main__":
    sys.exit(main(sys.argv))
