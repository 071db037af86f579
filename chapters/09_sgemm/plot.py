#!/usr/bin/env python3
"""Chapter 09's figures from the CSV files `./lab bench 09` wrote (matplotlib).

    ./lab bench 09 --solution                          # sgemm.csv (a plain run: check, then the table)
    ./lab bench 09 --solution -- --mode=shapes         # shapes.csv
    ./lab bench 09 --solution -- --mode=roofline       # roofline.csv, ceilings.csv
    ./lab bench 09 --solution -- --mode=gram           # gram.csv
    python3 chapters/09_sgemm/plot.py DIR              # reads DIR/*.csv, writes DIR/*.png

sgemm.png (and gram.png): each step's speed as a fraction of cuBLAS at one shape.
shapes.png: the same fractions at 4096^3, 8192^3 and a ragged shape, side by side.
roofline.png: log-log, GFLOP/s against FLOP per compulsory DRAM byte: this GPU's measured
FP32 FMA peak and DRAM line (from a device-to-device copy), one point per kernel.
"""
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the checkout: labkit is importable
from labkit.plotting import barh, number, plot_main, read_csv  # noqa: E402  (sets matplotlib's backend)


def timed(rows):
    """The rows that were checked and timed (a wrong or skipped one has no speed)."""
    return [r for r in rows if r["result"] == "ok" and number(r["of cuBLAS"]) == number(r["of cuBLAS"])]


def fractions(folder, name, what, label):
    rows = timed(read_csv(folder / f"{name}.csv"))
    return barh(folder / f"{name}.png", [r["kernel"] for r in rows], [number(r["of cuBLAS"]) for r in rows],
                "speed, fraction of cuBLAS (FP32, no TF32) at the same shape", f"{what}: {label}")


def sgemm(folder, label):
    return fractions(folder, "sgemm", "SGEMM steps against cuBLAS", label)


def gram(folder, label):
    return fractions(folder, "gram", "The Gram matrix A A^T against cuBLAS", label)


def shapes(folder, label):
    import matplotlib.pyplot as plt  # here: without matplotlib, plot_main says so in one line

    rows = timed(read_csv(folder / "shapes.csv"))
    shape_names = list(dict.fromkeys(r["shape"] for r in rows))
    kernels = list(dict.fromkeys(r["kernel"] for r in rows))
    height = 0.8 / max(len(shape_names), 1)
    fig, ax = plt.subplots(figsize=(9, 0.3 * len(kernels) * max(len(shape_names), 1) + 1.8))
    for s, shape in enumerate(shape_names):
        speed = {r["kernel"]: number(r["of cuBLAS"]) for r in rows if r["shape"] == shape}
        ys = [i - 0.4 + height * (s + 0.5) for i, k in enumerate(kernels) if k in speed]
        ax.barh(ys, [speed[k] for k in kernels if k in speed], height=height, label=shape)
    ax.set_yticks(range(len(kernels)))
    ax.set_yticklabels(kernels, fontsize=8)
    ax.invert_yaxis()
    ax.set_xlabel("speed, fraction of cuBLAS (FP32, no TF32) at the same shape")
    ax.set_title(f"SGEMM steps at three shapes: {label}", fontsize=9)
    ax.grid(True, axis="x", alpha=0.3)
    ax.legend(fontsize=7)
    fig.tight_layout()
    path = folder / "shapes.png"
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path


def roofline(folder, label):
    import matplotlib.pyplot as plt

    points = [r for r in read_csv(folder / "roofline.csv") if r["result"] == "ok"]
    intensities = [number(r["FLOP/byte"]) for r in points] or [1.0]
    fig, ax = plt.subplots(figsize=(11, 5))
    lo, hi = min(0.1, min(intensities) / 4), max(intensities) * 4
    if (folder / "ceilings.csv").exists():  # written beside roofline.csv by --mode=roofline
        ceilings = {r["ceiling"]: number(r["measured"]) for r in read_csv(folder / "ceilings.csv")}
        peak, dram = ceilings["FP32 FMA peak"], ceilings["DRAM bandwidth"]
        ridge = peak / dram
        hi = max(hi, ridge * 10)
        ax.plot([lo, ridge], [lo * dram, peak], "--", color="tab:blue",
                label=f"DRAM, measured (copy): {dram:.0f} GB/s")
        ax.plot([ridge, hi], [peak, peak], "-", color="tab:red",
                label=f"FP32 FMA peak, measured: {peak:.0f} GFLOP/s")
        # The L2 and shared-memory lines, where the run measured them: the same slope, for a
        # kernel's FLOP per byte moved at that level (its own intensity there, not the
        # compulsory DRAM one on the x axis: a step sits under the lowest roof of the three).
        for name, style, color in (("L2 bandwidth", "-.", "tab:green"), ("shared-memory bandwidth", ":", "tab:purple")):
            if name in ceilings:
                bw = ceilings[name]
                ax.plot([lo, peak / bw], [lo * bw, peak], style, color=color,
                        label=f"{name.split(' bandwidth')[0]}, measured: {bw:.0f} GB/s (FLOP per byte at that level)")
        ax.axvline(ridge, color="grey", linewidth=0.6, linestyle=":")
        ax.annotate(f"ridge {ridge:.1f} FLOP/byte", (ridge, peak), textcoords="offset points", xytext=(4, -14),
                    fontsize=7, color="grey")
    markers = "osD^v<>ph*"
    for i, r in enumerate(points):
        ax.plot(number(r["FLOP/byte"]), number(r["GFLOP/s"]), markers[i % len(markers)], markersize=7,
                label=f"{r['kernel']}: {number(r['GFLOP/s']):.0f} GFLOP/s")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlim(lo, hi)
    ax.set_xlabel("arithmetic intensity, FLOP per compulsory DRAM byte (A, B read once, C written once)")
    ax.set_ylabel("GFLOP/s")
    ax.set_title(f"Roofline, measured: {label}", fontsize=9)
    ax.grid(True, which="both", alpha=0.25)
    # Beside the axes: inside, the legend would cover the L2 and shared-memory lines.
    ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0))
    fig.tight_layout()
    path = folder / "roofline.png"
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path


def main(argv):
    return plot_main(argv, [("sgemm.csv", sgemm), ("gram.csv", gram), ("shapes.csv", shapes),
                            ("roofline.csv", roofline)])


if __name__ == "__main__":
    sys.exit(main(sys.argv))
