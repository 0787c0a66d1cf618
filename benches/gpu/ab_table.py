"""A markdown table of device_run.sh's paired runs: one column per build, the median (min–max)
GB/s of its rounds per case, and a ratio column of the last build over the first.

    python3 ab_table.py AB_LOG [TORCH_LOG] [--changed PERCENT]

AB_LOG: ab.log (`== BUILD (round N)` headers, then cuda-perf's `key GB/s` lines); TORCH_LOG:
torch_peers.py's output, added as a PyTorch column; --changed P keeps the cases whose last ÷
first ratio is off 1 by more than P percent.
"""
import collections
import re
import statistics
import sys


def main():
    args = sys.argv[1:]
    changed = None
    if "--changed" in args:
        i = args.index("--changed")
        changed = float(args[i + 1]) / 100
        del args[i:i + 2]
    runs = collections.defaultdict(lambda: collections.defaultdict(list))
    builds = []
    build = None
    for line in open(args[0]):
        if line.startswith("=="):
            build = line.split()[1]
            if build not in builds:
                builds.append(build)
            continue
        m = re.match(r"\s+(\S+)\s+([\d.]+) GB/s", line)
        if m and build:
            runs[m.group(1)][build].append(float(m.group(2)))
    torch = {}
    if len(args) > 1:
        for line in open(args[1]):
            m = re.match(r"(\S+) ([\d.]+) GB/s", line)
            if m:
                torch[m.group(1)] = float(m.group(2))
    names = [b.rsplit("/", 1)[-1] for b in builds]
    head = ["case"] + names + [f"{names[-1]} ÷ {names[0]}"] + (["PyTorch"] if torch else [])
    print("| " + " | ".join(head) + " |\n|---|" + "---:|" * (len(head) - 1))
    for key, by in runs.items():
        if not all(by.get(b) for b in builds):
            continue
        med = [statistics.median(by[b]) for b in builds]
        ratio = med[-1] / med[0] if med[0] else float("inf")
        if changed is not None and abs(ratio - 1) <= changed:
            continue
        cells = [f"{m:.0f} ({min(by[b]):.0f}–{max(by[b]):.0f})" if len(by[b]) > 1 else f"{m:.0f}" for m, b in zip(med, builds)]
        row = [key] + cells + [f"{ratio:.3f}"] + ([f"{torch[key]:.0f}" if key in torch else "–"] if torch else [])
        print("| " + " | ".join(row) + " |")


main()
