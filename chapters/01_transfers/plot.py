#!/usr/bin/env python3
"""Chapter 01's figures from the CSV files `./lab bench 01` wrote (matplotlib).

    python3 chapters/01_transfers/plot.py DIR     # reads DIR/*.csv, writes DIR/*.png

bandwidth.png: GB/s against transfer size for each kind of host memory, both directions,
with the link's theoretical rate; batch.png: time of 1024 small copies per method;
crossover.png: the batched speed-up against piece size; mapped.png: the mapped-memory modes'
times (--mode=mapped-access, --mode=mapped-overlap), each against its first row. Each title
names the GPU and date.
"""
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the checkout: labkit is importable
from labkit.plotting import device, device_label, read_csv  # noqa: E402  (sets matplotlib's backend)

import matplotlib.pyplot as plt  # noqa: E402


def read(folder, name):
    return read_csv(folder / f"{name}.csv")


def plot_bandwidth(folder, label, link):
    rows = read(folder, "bandwidth")
    fig, axes = plt.subplots(1, 2, figsize=(12, 4.5), sharey=True)
    everyone = list(dict.fromkeys(r["method"] for r in rows))  # first-seen order
    colour = {m: f"C{i}" for i, m in enumerate(everyone)}       # one colour per method in both panels
    for ax, direction in zip(axes, ["HtoD", "DtoH"]):
        for m in everyone:
            pts = [(int(r["bytes"]), float(r["GB/s"])) for r in rows if r["direction"] == direction and r["method"] == m]
            if pts:
                ax.plot([p[0] for p in pts], [p[1] for p in pts], marker="o", label=m, color=colour[m])
        if link > 0:
            ax.axhline(link, color="grey", linestyle="--", label=f"link, theoretical ({link:.0f} GB/s)")
        ax.set_xscale("log", base=2)
        ax.set_xlabel("transfer size (bytes)")
        ax.set_title(direction)
        ax.grid(True, alpha=0.3)
    axes[0].set_ylabel("GB/s")
    axes[0].legend(fontsize=8)
    fig.suptitle(f"Host-device bandwidth by kind of host memory: {label}")
    fig.tight_layout()
    fig.savefig(folder / "bandwidth.png", dpi=120)


def plot_batch(folder, label):
    rows = read(folder, "batch")
    fig, ax = plt.subplots(figsize=(8, 4))
    ax.barh([r["method"] for r in rows], [float(r["median_ms"]) for r in rows])
    for i, r in enumerate(rows):
        ax.text(float(r["median_ms"]), i, f" {float(r['speed-up vs cudaMemcpy']):.1f}x", va="center")
    ax.invert_yaxis()
    ax.set_xlabel("ms for all pieces (median)")
    ax.set_title(f"Many small copies vs batched: {label}", fontsize=9)
    fig.tight_layout()
    fig.savefig(folder / "batch.png", dpi=120)


def plot_crossover(folder, label):
    rows = read(folder, "crossover")
    fig, ax = plt.subplots(figsize=(7, 4))
    ax.plot([int(r["piece bytes"]) for r in rows], [float(r["batched speed-up"]) for r in rows], marker="o")
    ax.axhline(1.0, color="grey", linestyle="--")
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_xlabel("piece size (bytes)")
    ax.set_ylabel("batched speed-up vs one copy per piece")
    ax.set_title(f"Where batching stops paying: {label}", fontsize=9)
    ax.grid(True, alpha=0.3)
    fig.tight_layout()
    fig.savefig(folder / "crossover.png", dpi=120)


def plot_mapped(folder, label):
    """One panel per mapped-memory mode whose CSV is in the folder: median ms per row."""
    parts = [(f, key, title) for f, key, title in [("mapped_access", "order", "mapped reads: coalesced or across lines"),
                                                   ("mapped_overlap", "what", "overlap without streams")]
             if (folder / f"{f}.csv").exists()]
    fig, axes = plt.subplots(len(parts), 1, figsize=(8, 1.2 + 1.6 * len(parts)), squeeze=False)
    for ax, (f, key, title) in zip(axes[:, 0], parts):
        rows = read(folder, f)
        ax.barh([r[key].strip() for r in rows], [float(r["median_ms"]) for r in rows])
        ax.invert_yaxis()
        ax.set_xlabel("ms (median)")
        ax.set_title(title, fontsize=9)
    fig.suptitle(f"Mapped host memory: {label}", fontsize=10)
    fig.tight_layout()
    fig.savefig(folder / "mapped.png", dpi=120)


def main(argv):
    if len(argv) != 2:
        print("usage: plot.py DIR", file=sys.stderr)
        return 2
    folder = Path(argv[1])
    label = device_label(folder)
    d = device(folder)
    link = float(d["link_gbps"]) if d else 0.0
    wrote = []
    for name, draw in [("bandwidth", lambda: plot_bandwidth(folder, label, link)),
                       ("batch", lambda: plot_batch(folder, label)),
                       ("crossover", lambda: plot_crossover(folder, label)),
                       ("mapped", lambda: plot_mapped(folder, label))]:
        csvs = ["mapped_access", "mapped_overlap"] if name == "mapped" else [name]
        if any((folder / f"{c}.csv").exists() for c in csvs):
            draw()
            wrote.append(str(folder / f"{name}.png"))
    print("\n".join(wrote) if wrote else f"no CSV files in {folder}")
    return 0 if wrote else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv))
