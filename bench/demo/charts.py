#!/usr/bin/python3
"""Draws weft-demo's charts from the folder it wrote (results.csv, scaling.csv), into that folder:

  times.png    time per workload, every library side by side (log scale; the rows measured in time only; where
               a row's oneTBB column holds another peer, such as the waits rows' threads, that peer by name)
  scaling.png  cost per node against graph size, on log axes (chain and independent nodes, build + run)

Usage: /usr/bin/python3 bench/demo/charts.py RESULTS_DIR   (needs Debian's python3-matplotlib)
"""
import csv
import math
import sys
from pathlib import Path

import matplotlib

matplotlib.use("Agg")  # files only: no display on a CI machine
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib import ticker  # noqa: E402

SECONDS = {"ns": 1e-9, "us": 1e-6, "ms": 1e-3, "s": 1.0}
LIBRARIES = ["weft", "oneTBB", "mutex pool", "std::async"]
COLOURS = {"weft": "#1f77b4", "oneTBB": "#ff7f0e", "mutex pool": "#7f7f7f", "std::async": "#bcbd22"}
# Where oneTBB has no equivalent (the waits rows), the CSV names what stands in its column instead; those get
# the colours below, in order of appearance, after the four above.
OTHER_COLOURS = ["#2ca02c", "#9467bd", "#8c564b", "#e377c2", "#17becf"]


def read_rows(path):
    """{workload: {library: (seconds, iqr_fraction)}} in the table's order, time rows only."""
    rows = {}
    with open(path, newline="") as f:
        for r in csv.DictReader(f):
            if r["unit"] not in SECONDS:
                continue
            rows.setdefault(r["workload"], {})[r["library"]] = (
                float(r["median"]) * SECONDS[r["unit"]], float(r["iqr_fraction"]))
    return rows


def times_chart(rows, out):
    libraries = [lib for lib in LIBRARIES if any(lib in by_lib for by_lib in rows.values())]
    for by_lib in rows.values():
        libraries += [lib for lib in by_lib if lib not in libraries]
    colours = dict(COLOURS)
    for k, lib in enumerate(lib for lib in libraries if lib not in COLOURS):
        colours[lib] = OTHER_COLOURS[k % len(OTHER_COLOURS)]
    # Bars sit by the table's column: a peer standing in for oneTBB takes oneTBB's place in its row.
    def column(lib):
        return LIBRARIES.index(lib) if lib in LIBRARIES else LIBRARIES.index("oneTBB")
    columns = sorted({column(lib) for lib in libraries})
    names = list(rows)
    height = 0.8 / len(columns)
    fig, ax = plt.subplots(figsize=(10, 0.42 * len(names) + 1.6))
    for lib in libraries:
        k = columns.index(column(lib))
        ys, xs, errs = [], [], []
        for i, name in enumerate(names):
            if lib not in rows[name]:
                continue
            seconds, iqr = rows[name][lib]
            ys.append(i + (k - (len(columns) - 1) / 2) * height)
            xs.append(seconds)
            errs.append(seconds * iqr / 2)
        ax.barh(ys, xs, height=height, xerr=errs, color=colours[lib], label=lib, error_kw={"elinewidth": 0.6})
    ax.set_yticks(range(len(names)), names, fontsize=8)
    ax.invert_yaxis()
    ax.set_xscale("log")
    ax.set_xlabel("time per workload, median (log scale; whiskers: half the interquartile range)")
    ax.grid(axis="x", which="major", alpha=0.3)
    ax.legend(loc="lower right", fontsize=8)
    ax.set_title("weft-demo: time per workload (shorter is better)")
    fig.tight_layout()
    fig.savefig(out, dpi=110)
    plt.close(fig)


def scaling_chart(path, out):
    series = {}
    with open(path, newline="") as f:
        for r in csv.DictReader(f):
            series.setdefault((r["shape"], r["library"]), []).append((int(r["nodes"]), float(r["ns_per_node"])))
    if not series:
        return False
    fig, ax = plt.subplots(figsize=(7, 4.5))
    for (shape, lib), points in sorted(series.items()):
        points.sort()
        ax.plot([p[0] for p in points], [p[1] for p in points], marker="o" if shape == "chain" else "s",
                linestyle="-" if shape == "chain" else "--", color=COLOURS.get(lib, "black"),
                label=f"{lib}, {shape}")
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    # Whole decades, so that every curve has labelled ticks around it.
    values = [p[1] for points in series.values() for p in points]
    ax.set_ylim(10 ** math.floor(math.log10(min(values))), 10 ** math.ceil(math.log10(max(values))))
    ax.yaxis.set_major_locator(ticker.LogLocator(subs=(1.0, 2.0, 5.0)))
    ax.yaxis.set_major_formatter(ticker.ScalarFormatter())
    ax.yaxis.set_minor_formatter(ticker.NullFormatter())
    ax.set_xlabel("graph size (nodes)")
    ax.set_ylabel("build + run time per node (ns)")
    ax.grid(which="major", alpha=0.3)
    ax.legend(fontsize=8)
    ax.set_title("weft-demo: cost per node against graph size")
    fig.tight_layout()
    fig.savefig(out, dpi=110)
    plt.close(fig)
    return True


def main(argv):
    if len(argv) != 2:
        print(__doc__.strip(), file=sys.stderr)
        return 2
    folder = Path(argv[1])
    results = folder / "results.csv"
    if not results.is_file():
        print(f"charts.py: {results} does not exist: run weft-demo --out {folder} first", file=sys.stderr)
        return 1
    times_chart(read_rows(results), folder / "times.png")
    drawn = ["times.png"]
    if (folder / "scaling.csv").is_file() and scaling_chart(folder / "scaling.csv", folder / "scaling.png"):
        drawn.append("scaling.png")
    print(f"charts: {', '.join(str(folder / name) for name in drawn)}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
