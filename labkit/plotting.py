"""What every chapter's plot.py shares: matplotlib without a display, reading the CSV
files a program wrote with --out, and the line that names the GPU and the date."""
import csv
from pathlib import Path

try:
    import matplotlib

    matplotlib.use("Agg")  # files only: the GPU machine has no display
except ModuleNotFoundError:  # plot_main says so in one line; reading CSVs still works
    matplotlib = None


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


def paired_barh(path, labels, series, xlabel, title, width=8, log=False, label_size=8):
    """Horizontal bars, two per label side by side: series is [(legend, values), (legend,
    values)]. Writes `path` (PNG) and returns it."""
    import matplotlib.pyplot as plt

    y = range(len(labels))
    fig, ax = plt.subplots(figsize=(width, 0.3 * len(labels) + 1.5))
    for shift, (legend, values) in zip((-0.2, 0.2), series):
        ax.barh([i + shift for i in y], values, height=0.4, label=legend)
    ax.set_yticks(list(y))
    ax.set_yticklabels(labels, fontsize=label_size)
    ax.invert_yaxis()
    if log:
        ax.set_xscale("log")
    ax.set_xlabel(xlabel)
    ax.set_title(title, fontsize=9)
    ax.grid(True, axis="x", alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path


def label_of(row):
    """A variant table's row as 'name xS' (S: its stages, where it has some): the columns
    'variant' and 'stages' of chapters 07 and 08's CSV files."""
    return row["variant"] + (f" x{row['stages']}" if row["stages"] not in ("-", "") else "")


def line_panels(path, panels, panel_title, names, points, xs, xlabel, dashed, title, log2_x=False):
    """One panel per value of `panels`, titled panel_title(value), all sharing the y axis:
    speed as a fraction of the read-only kernel. In each, one line per name, through
    points(name, panel) -> {x: speed} at the xs it has (evenly spaced, or on a log2 axis),
    dashed where the name starts with one of `dashed` (the references). Writes `path`."""
    import matplotlib.pyplot as plt  # here: without matplotlib, plot_main says so in one line

    fig, axes = plt.subplots(1, len(panels), figsize=(4 * len(panels), 4.5), sharey=True, squeeze=False)
    for ax, panel in zip(axes[0], panels):
        for name in names:
            pts = points(name, panel)
            have = [x for x in xs if x in pts]
            ax.plot(have if log2_x else [xs.index(x) for x in have], [pts[x] for x in have],
                    "--" if name.startswith(dashed) else "-", marker="o", markersize=3, label=name)
        if log2_x:
            ax.set_xscale("log", base=2)
        ax.set_xticks(xs if log2_x else range(len(xs)))
        ax.set_xticklabels([str(x) for x in xs])
        ax.set_xlabel(xlabel)
        ax.set_title(panel_title(panel), fontsize=9)
        ax.grid(True, alpha=0.3)
    axes[0][0].set_ylabel("speed, fraction of the read-only kernel")
    axes[0][-1].legend(fontsize=6, loc="lower right")
    fig.suptitle(title, fontsize=9)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path


def barh(path, labels, values, xlabel, title):
    """One horizontal bar per label, top to bottom. Writes `path` (PNG) and returns it."""
    import matplotlib.pyplot as plt

    y = range(len(labels))
    fig, ax = plt.subplots(figsize=(8, 0.4 * len(labels) + 1.5))
    ax.barh(list(y), values)
    ax.set_yticks(list(y))
    ax.set_yticklabels(labels, fontsize=8)
    ax.invert_yaxis()
    ax.set_xlabel(xlabel)
    ax.set_title(title, fontsize=9)
    ax.grid(True, axis="x", alpha=0.3)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path


def number(text):
    """A CSV cell as a float; NaN for '-' or anything that is not a number."""
    try:
        return float(text)
    except ValueError:
        return float("nan")


def plot_main(argv, figures):
    """The body of a chapter's `plot.py DIR`: figures is [(csv file name, function(folder,
    device label) -> png path)]; each figure whose CSV is in DIR is drawn. Exit code 0 when
    something was drawn, 1 when DIR had none of the CSVs, 2 for a bad command line, 77
    without matplotlib."""
    import sys

    if len(argv) != 2:
        print("usage: plot.py DIR", file=sys.stderr)
        return 2
    if matplotlib is None:
        print("matplotlib is not installed: no figures (./lab bench installs it into .venv, or: "
              "python3 -m pip install matplotlib)", file=sys.stderr)
        return 77
    folder = Path(argv[1])
    label = device_label(folder)
    wrote = [draw(folder, label) for name, draw in figures if (folder / name).exists()]
    print("\n".join(str(w) for w in wrote) if wrote else f"no CSV files in {folder}")
    return 0 if wrote else 1
