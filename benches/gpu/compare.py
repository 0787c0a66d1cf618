"""tensor-ops GB/s over PyTorch GB/s, case by case and size by size, from one session's logs.

    python3 compare.py CUDA_PERF_LOG TORCH_LOG

CUDA_PERF_LOG: what `cuda-perf` printed (its `key GB/s ratio` lines); TORCH_LOG: what
`torch_peers.py` printed. Fused chains are held to `torch.compile` (fused_X vs compiled_X),
everything else to PyTorch eager with the same key. Prints a markdown table per size, then
the cases below PyTorch.
"""
import collections
import re
import sys


def load(path, pat):
    d = {}
    for line in open(path):
        m = re.match(pat, line)
        if m:
            d[m.group(1)] = float(m.group(2))
    return d


ours = load(sys.argv[1], r"\s+(\S+)\s+([\d.]+) GB/s\s+ratio")
torch = load(sys.argv[2], r"(\S+) ([\d.]+) GB/s")


def size_of(key):
    """Elements of the key's shape."""
    n = 1
    for d in key.split("/")[-1].split("x"):
        n *= int(d) if d.isdigit() else 1
    return n


rows = collections.OrderedDict()
for k, o in ours.items():
    if k.startswith("memcpy"):
        continue
    peer = k.replace("fused_", "compiled_", 1) if k.startswith("fused_") else k
    if peer in torch:
        rows[k] = (o, torch[peer], "torch.compile" if peer != k else "eager")
by_bytes = collections.defaultdict(list)
sparse = []
for k, v in rows.items():
    if k.startswith(("spmv/", "spmm/")):
        sparse.append((k, v))  # one size: 2^24 entries (PyTorch: cuSPARSE)
        continue
    dt = k.split("/")[1]
    size = {"u8": 1, "i8": 1, "f8e4m3": 1, "f8e5m2": 1, "qint8": 1, "f16": 2, "bf16": 2, "f32": 4, "i64": 8, "f64": 8}.get(dt, 4) * size_of(k)
    by_bytes[size].append((k, v))
losses = []
wins = 0
tables = [(f"arrays of {size / 2**20:g} MiB", by_bytes[size]) for size in sorted(by_bytes)]
if sparse:
    tables.append(("CSR products, 2^24 entries (PyTorch: cuSPARSE)", sparse))
for title, cases in tables:
    print(f"\n### {title}\n")
    print("| case | tensor-ops GB/s | PyTorch GB/s | ratio | peer |\n|---|---:|---:|---:|---|")
    for k, (o, t, peer) in sorted(cases):
        r = o / t if t else float("inf")
        wins += r >= 1.0
        if r < 1.0:
            losses.append((r, k, o, t))
        print(f"| {k} | {o:.0f} | {t:.0f} | {r:.2f}x | {peer} |")
print(f"\n{wins} of {len(rows)} cases at or above PyTorch. Below it:")
for r, k, o, t in sorted(losses):
    print(f"  {r:.2f}x  {k}  ({o:.0f} vs {t:.0f} GB/s)")
