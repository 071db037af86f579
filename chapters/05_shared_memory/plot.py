#!/usr/bin/env python3
"""Chapter 05's figures from the CSV files `./lab bench 05` wrote (matplotlib).

    ./lab bench 05 --solution -- --mode=profile      # model_vs_ncu.csv (needs ncu)
    ./lab bench 05 --solution -- --mode=transpose    # transpose.csv
    python3 chapters/05_shared_memory/plot.py DIR    # reads DIR/*.csv, writes DIR/*.png

wavefronts.png: for every access-width experiment, the bank model's wavefronts beside
Nsight Compute's (the lesson's table, drawn). transpose.png: each transpose's speed as a
fraction of cudaMemcpy device to device and of the tile-shaped copy.
"""
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the checkout: labkit is importable
from labkit.plotting import number, paired_barh, plot_main, read_csv  # noqa: E402  (sets matplotlib's backend)


def wavefronts(folder, label):
    rows = [r for r in read_csv(folder / "model_vs_ncu.csv") if r["model wavefronts"] != "-"]
    names = [f"{r['experiment']} ({r['op']})" if r["experiment"].startswith("transpose") else r["experiment"]
             for r in rows]
    return paired_barh(folder / "wavefronts.png", names,
                       [("bank model", [number(r["model wavefronts"]) for r in rows]),
                        ("Nsight Compute", [number(r["ncu wavefronts"]) for r in rows])],
                       "shared-memory wavefronts (log scale)", f"Bank model against ncu: {label}",
                       width=9, log=True, label_size=7)


def transpose(folder, label):
    rows = read_csv(folder / "transpose.csv")
    return paired_barh(folder / "transpose.png", [r["kernel"] for r in rows],
                       [("of cudaMemcpy", [number(r["of cudaMemcpy"]) for r in rows]),
                        ("of copy_tiles", [number(r["of copy_tiles"]) for r in rows])],
                       "speed, as a fraction", f"Transposes: {label}")


def main(argv):
    return plot_main(argv, [("model_vs_ncu.csv", wavefronts), ("transpose.csv", transpose)])


if __name__ == "__main__":
    sys.exit(main(sys.argv))
