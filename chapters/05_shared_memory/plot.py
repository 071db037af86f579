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

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "tools"))
from plotting import device_label, read_csv  # noqa: E402  (sets matplotlib's backend)

import matplotlib.pyplot as plt  # noqa: E402


def number(text):
    try:
        return float(text)
    except ValueError:
        return float("nan")


def wavefronts(folder, label):
    rows = [r for r in read_csv(folder / "model_vs_ncu.csv") if r["model wavefronts"] != "-"]
    names = [f"{r['experiment']} ({r['op']})" if r["experiment"].startswith("transpose") else r["experiment"]
             for r in rows]
    y = range(len(rows))
    fig, ax = plt.subplots(figsize=(9, 0.28 * len(rows) + 1.5))
    ax.barh([i - 0.2 for i in y], [number(r["model wavefronts"]) for r in rows], height=0.4, label="bank model")
    ax.barh([i + 0.2 for i in y], [number(r["ncu wavefronts"]) for r in rows], height=0.4, label="Nsight Compute")
    ax.set_yticks(list(y))
    ax.set_yticklabels(names, fontsize=7)
    ax.invert_yaxis()
    ax.set_xscale("log")
    ax.set_xlabel("shared-memory wavefronts (log scale)")
    ax.set_title(f"Bank model against ncu: {label}", fontsize=9)
    ax.grid(True, axis="x", alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(folder / "wavefronts.png", dpi=120)
    return folder / "wavefronts.png"


def transpose(folder, label):
    rows = read_csv(folder / "transpose.csv")
    y = range(len(rows))
    fig, ax = plt.subplots(figsize=(8, 0.4 * len(rows) + 1.5))
    ax.barh([i - 0.2 for i in y], [number(r["of cudaMemcpy"]) for r in rows], height=0.4, label="of cudaMemcpy")
    ax.barh([i + 0.2 for i in y], [number(r["of copy_tiles"]) for r in rows], height=0.4, label="of copy_tiles")
    ax.set_yticks(list(y))
    ax.set_yticklabels([r["kernel"] for r in rows], fontsize=8)
    ax.invert_yaxis()
    ax.set_xlabel("speed, as a fraction")
    ax.set_title(f"Transposes: {label}", fontsize=9)
    ax.grid(True, axis="x", alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(folder / "transpose.png", dpi=120)
    return folder / "transpose.png"


def main(argv):
    if len(argv) != 2:
        print("usage: plot.py DIR", file=sys.stderr)
        return 2
    folder = Path(argv[1])
    label = device_label(folder)
    wrote = []
    if (folder / "model_vs_ncu.csv").exists():
        wrote.append(wavefronts(folder, label))
    if (folder / "transpose.csv").exists():
        wrote.append(transpose(folder, label))
    print("\n".join(str(w) for w in wrote) if wrote else f"no CSV files in {folder}")
    return 0 if wrote else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv))
