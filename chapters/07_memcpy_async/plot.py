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
from labkit.plotting import barh, label_of, line_panels, number, plot_main, read_csv  # noqa: E402

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
