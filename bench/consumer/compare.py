#!/usr/bin/env python3
"""The table of consumer_bench.sh: weft's own build against a consumer's, row by row.

usage: compare.py OUT_DIR

Reads OUT_DIR/{own,consumer}_{pool,graph}_<round>.json (Google Benchmark JSON with median aggregates) and prints a
Markdown table. Per row and build: the median over the rounds of each run's median, the spread of those medians,
and the ratio to oneTBB's time in the same runs (oneTBB is built the same in both: Debian's library). The last
column is the consumer's time over weft's own: 1.00 is the same speed.
"""

import glob
import json
import os
import re
import statistics
import sys


def medians(out_dir, side):
    """{row name: [median of each run]} for one build, the rows of every binary and round."""
    rows = {}
    for path in sorted(glob.glob(os.path.join(out_dir, f"{side}_*_*.json"))):
        if os.path.getsize(path) == 0:
            continue  # WEFT_BENCH_FILTER matched no row of that binary: Google Benchmark wrote nothing
        with open(path) as f:
            data = json.load(f)
        for bench in data["benchmarks"]:
            if bench.get("aggregate_name") != "median":
                continue
            name = bench["run_name"]
            scale = {"ns": 1e-9, "us": 1e-6, "ms": 1e-3, "s": 1.0}[bench["time_unit"]]
            rows.setdefault(name, []).append(bench["real_time"] * scale)
    return rows


def peer_of(name):
    """The oneTBB row a weft row is measured against (the Subflow fib rows against oneTBB's fib), or None."""
    if "/weft" not in name:
        return None
    base = re.sub(r"^fib28_subflow(_inline)?/", "fib28/", name)
    return base.replace("/weft", "/oneTBB", 1)


def show(seconds):
    for unit, scale in (("s", 1.0), ("ms", 1e-3), ("us", 1e-6)):
        if seconds >= scale:
            return f"{seconds / scale:.3g} {unit}"
    return f"{seconds / 1e-9:.3g} ns"


def cell(values):
    mid = statistics.median(values)
    if len(values) == 1:
        return mid, show(mid)
    return mid, f"{show(mid)} ({show(min(values))}–{show(max(values))})"


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    out_dir = sys.argv[1]
    own, consumer = medians(out_dir, "own"), medians(out_dir, "consumer")
    paired = [name for name in sorted(own) if peer_of(name) is not None and name in consumer]
    if not paired:
        sys.exit(f"compare.py: no weft row measured by both builds in {out_dir} "
                 "(own_*.json and consumer_*.json with median aggregates)")
    rounds = max(len(own[name]) for name in paired)
    print(f"weft's own build (LTO) against a consumer's (buildtype=release, no LTO): medians of {rounds} rounds")
    print("of each run's median, the range in brackets; ratios to oneTBB's time in the same runs.\n")
    print("| row | own build | x oneTBB | consumer build | x oneTBB | consumer / own |")
    print("|---|---|---|---|---|---|")
    for name in paired:
        peer = peer_of(name)
        own_mid, own_text = cell(own[name])
        con_mid, con_text = cell(consumer[name])
        own_ratio = own_mid / statistics.median(own[peer]) if peer in own else float("nan")
        con_ratio = con_mid / statistics.median(consumer[peer]) if peer in consumer else float("nan")
        label = name.removesuffix("/real_time").removesuffix("/manual_time")
        print(f"| {label} | {own_text} | {own_ratio:.2f} | {con_text} | {con_ratio:.2f} | {con_mid / own_mid:.2f} |")


if __name__ == "__main__":
    main()
