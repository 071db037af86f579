#!/usr/bin/env python3
"""Chapter 04's figures from the CSV files `./lab bench 04` wrote (matplotlib).

    python3 chapters/04_coalescing/plot.py DIR     # reads DIR/*.csv, writes DIR/*.png

offset.png and stride.png: effective bandwidth against the offset or the stride, as a
fraction of cudaMemcpy, with the sector model's efficiency drawn over it (the Best
Practices Guide's figures, measured), and, when dram.csv is there (run with --dram), the
fraction of the bytes DRAM read that the copy wanted.
"""
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the checkout: labkit is importable
from labkit.plotting import device_label, read_csv  # noqa: E402  (sets matplotlib's backend)

import matplotlib.pyplot as plt  # noqa: E402


def plot(folder, name, label):
    rows = read_csv(folder / f"{name}.csv")
    x = [int(r[name]) for r in rows]
    fig, ax = plt.subplots(figsize=(8, 4.2))
    ax.plot(x, [float(r["of cudaMemcpy"]) for r in rows], marker="o", label="measured: effective GB/s / cudaMemcpy")
    ax.plot(x, [float(r["model efficiency"]) for r in rows], linestyle="--",
            label="sector model: wanted bytes / moved bytes (L1)")
    if (folder / "dram.csv").exists():
        dram = [r for r in read_csv(folder / "dram.csv") if r["pattern"] == name]
        ax.plot([int(r["k"]) for r in dram], [1 / float(r["DRAM read / wanted"]) for r in dram], linestyle=":",
                marker=".", label="Nsight Compute: wanted bytes / DRAM bytes read")
    ax.set_xlabel(f"{name} (floats)")
    ax.set_ylim(0, 1.1)
    ax.set_ylabel("fraction")
    ax.set_title(f"{name.capitalize()} copy of floats: {label}", fontsize=9)
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(folder / f"{name}.png", dpi=120)
    return folder / f"{name}.png"


def main(argv):
    if len(argv) != 2:
        print("usage: plot.py DIR", file=sys.stderr)
        return 2
    folder = Path(argv[1])
    wrote = [plot(folder, n, device_label(folder)) for n in ("offset", "stride") if (folder / f"{n}.csv").exists()]
    print("\n".join(str(w) for w in wrote) if wrote else f"no CSV files in {folder}")
    return 0 if wrote else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv))
