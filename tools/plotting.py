"""What every chapter's plot.py shares: matplotlib without a display, reading the CSV
files a program wrote with --out, and the line that names the GPU and the date."""
import csv
from pathlib import Path

import matplotlib

matplotlib.use("Agg")  # files only: the GPU machine has no display


def read_csv(path):
    """The rows of a CSV file as dictionaries keyed by its header."""
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


def device(folder):
    """The device.csv row the program wrote beside its tables, or None."""
    path = Path(folder) / "device.csv"
    return read_csv(path)[0] if path.exists() else None


def device_label(folder, engines=False):
    """'NVIDIA H200, PCIe gen 5 x16, 2026-11-22' (with the copy engines when asked)."""
    d = device(folder)
    if d is None:
        return "unknown GPU"
    parts = [d["name"]]
    if engines:
        parts.append(f"{d['copy_engines']} copy engines")
    parts += [f"PCIe gen {d['pcie_gen']} x{d['pcie_width']}", d["date"]]
    return ", ".join(parts)
