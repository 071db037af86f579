#!/usr/bin/env python3
"""Chapter 03's figure from the CSV files `./lab bench 03` wrote (matplotlib).

    python3 chapters/03_unified_memory/plot.py DIR     # reads DIR/*.csv, writes DIR/*.png

migration.png: for each way of getting the data to the GPU and back to the CPU, the time
and the bytes that migrated (all of them, and those moved by prefetch), from CUPTI.
"""
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the checkout: labkit is importable
from labkit.plotting import device_label, read_csv  # noqa: E402  (sets matplotlib's backend)

import matplotlib.pyplot as plt  # noqa: E402


read = read_csv


def number(text):
    try:
        return float(text)
    except ValueError:
        return 0.0


def panel(ax_time, ax_bytes, rows, name_key, moved_key, title):
    names = [r[name_key] for r in rows]
    ax_time.barh(names, [number(r["ms"]) for r in rows], color="tab:blue")
    ax_time.invert_yaxis()
    ax_time.set_xlabel("ms (median)")
    ax_time.set_title(title, fontsize=9, loc="left")
    ax_bytes.barh(names, [number(r[moved_key]) for r in rows], color="tab:grey", label="migrated")
    ax_bytes.barh(names, [number(r["of which prefetched"]) for r in rows], color="tab:green", label="of which prefetched")
    ax_bytes.invert_yaxis()
    ax_bytes.set_yticklabels([])
    ax_bytes.set_xlabel("MiB migrated (CUPTI)")
    ax_bytes.legend(fontsize=7, loc="lower right")


def main(argv):
    if len(argv) != 2:
        print("usage: plot.py DIR", file=sys.stderr)
        return 2
    folder = Path(argv[1])
    parts = [(f, n, k, t) for f, n, k, t in [("strategies", "strategy", "MiB to GPU", "to the GPU"),
                                            ("way_back", "way", "MiB to CPU", "back to the CPU")]
             if (folder / f"{f}.csv").exists()]
    if not parts:
        # --mode=sync-rules writes tables of checks, which have no figure: not a failure.
        tables = [p.name for p in sorted(folder.glob("*.csv")) if p.stem in ("sync_rules", "during_kernel")]
        print(f"{', '.join(tables)}: tables, no figure" if tables else f"no CSV files in {folder}")
        return 0 if tables else 1
    fig, axes = plt.subplots(len(parts), 2, figsize=(12, 2.2 + 2.0 * len(parts)), squeeze=False,
                             gridspec_kw={"width_ratios": [3, 2]})
    for row, (f, name_key, moved_key, title) in enumerate(parts):
        panel(axes[row, 0], axes[row, 1], read(folder / f"{f}.csv"), name_key, moved_key, title)
    fig.suptitle(f"Unified memory, 256 MiB each way: {device_label(folder)}", fontsize=9)
    fig.tight_layout()
    fig.savefig(folder / "migration.png", dpi=110)
    print(folder / "migration.png")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
