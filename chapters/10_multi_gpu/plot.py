#!/usr/bin/env python3
"""Chapter 10's figures from the CSV files `./lab bench 10` wrote (matplotlib).

    python3 chapters/10_multi_gpu/plot.py DIR     # reads DIR/*.csv, writes DIR/*.png

matrix.png: the peer bandwidth matrix, one way (cudaMemcpyPeerAsync) for every ordered pair,
with both ways at once and the trip through the host beside it; ring.png: the ring's bus
bandwidth against NCCL's over the all-reduce's size. Each title names the GPU and date.
"""
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the checkout: labkit is importable
from labkit.plotting import number, plot_main, read_csv  # noqa: E402  (sets matplotlib's backend)


def plot_matrix(folder, label):
    import matplotlib.pyplot as plt

    rows = read_csv(folder / "matrix.csv")
    devices = sorted({int(r["from"]) for r in rows} | {int(r["to"]) for r in rows})
    index = {d: i for i, d in enumerate(devices)}
    grid = [[float("nan")] * len(devices) for _ in devices]
    for r in rows:
        grid[index[int(r["from"])]][index[int(r["to"])]] = number(r["peer copy GB/s"])
    fig, (left, right) = plt.subplots(1, 2, figsize=(12, 4.8))
    image = left.imshow(grid, cmap="viridis", vmin=0)  # from 0: near-equal links look near-equal
    for r in rows:
        i, j = index[int(r["from"])], index[int(r["to"])]
        left.text(j, i, f"{number(r['peer copy GB/s']):.0f}", ha="center", va="center", color="white", fontsize=9)
    left.set_xticks(range(len(devices)), [str(d) for d in devices])
    left.set_yticks(range(len(devices)), [str(d) for d in devices])
    left.set_xlabel("to device")
    left.set_ylabel("from device")
    left.set_title("cudaMemcpyPeerAsync, one way (GB/s)")
    fig.colorbar(image, ax=left)
    pairs = [f"{r['from']}->{r['to']}" for r in rows]
    xs = range(len(rows))
    width = 0.27
    for k, (column, name) in enumerate([("peer copy GB/s", "peer, one way"), ("both ways at once GB/s", "both ways"),
                                        ("through the host GB/s", "through the host")]):
        right.bar([x + (k - 1) * width for x in xs], [number(r[column]) for r in rows], width, label=name)
    right.set_xticks(list(xs), pairs, rotation=45 if len(rows) > 6 else 0)
    right.set_ylabel("GB/s")
    right.legend(fontsize=8)
    right.grid(True, axis="y", alpha=0.3)
    fig.suptitle(f"Between GPUs: {label}")
    fig.tight_layout()
    path = folder / "matrix.png"
    fig.savefig(path, dpi=120)
    return path


def plot_ring(folder, label):
    import matplotlib.pyplot as plt

    rows = read_csv(folder / "ring.csv")
    sizes = [int(r["bytes"]) for r in rows]
    fig, ax = plt.subplots(figsize=(8, 4.5))
    ax.plot(sizes, [number(r["yours bus GB/s"]) for r in rows], marker="o", label="your ring")
    nccl = [number(r["NCCL bus GB/s"]) for r in rows]
    if any(v == v for v in nccl):  # not all NaN: NCCL was there
        ax.plot(sizes, nccl, marker="s", label="ncclAllReduce")
    ax.set_xscale("log", base=2)
    ax.set_xlabel("all-reduce size (bytes)")
    ax.set_ylabel("bus bandwidth (GB/s)")
    ax.grid(True, alpha=0.3)
    ax.legend()
    ax.set_title(f"All-reduce, ring against NCCL: {label}", fontsize=9)
    fig.tight_layout()
    path = folder / "ring.png"
    fig.savefig(path, dpi=120)
    return path


if __name__ == "__main__":
    sys.exit(plot_main(sys.argv, [("matrix.csv", plot_matrix), ("ring.csv", plot_ring)]))
