#!/usr/bin/env python3
"""scipy.sparse and PyTorch peers of cpu-perf's sparse cases (issue 34), on the very same patterns.

The matrices are built from splitmix64 of the entry number exactly as
benches/src/sparse.rs documents (numpy uint64 arithmetic wraps as Rust's wrapping ops do):
  spmv/spmm  CSR [rows, rows], per_row entries a row, column splitmix64(j) % rows, each
             row's columns sorted (duplicates kept)
  to_dense   element i of an [r, c] f32 result specified when splitmix64(i) % 1000 < permille
  coalesce   nnz entries of [side, side], row splitmix64(j) % side, col splitmix64(j + nnz) % side

Each case is timed `--repeat` times (median, after one warm-up); prints one line per case
and peer with ms and GB/s (the same bytes formula as cpu-perf). scipy's sparse kernels run
on one thread and use int32 indices (its default when they fit) under every key.
PyTorch (when importable) runs on torch.get_num_threads() threads (2 here) with its
default int64 indices, and int32 CSR components for the `/i32` keys. Usage:
  PYTHONPATH=/work/scipy-lib:/work/numpy-lib[:/work/torch-lib] python3 benches/python/sparse_peers.py [--quick] [--repeat N]
"""
import argparse
import statistics
import time

import numpy as np
import scipy
import scipy.sparse as sp

try:
    import warnings

    import torch

    warnings.filterwarnings("ignore", message=".*Sparse CSR tensor support is in beta.*")
except ImportError:
    torch = None

M64 = np.uint64(0xFFFFFFFFFFFFFFFF)


def splitmix64(x):
    x = np.asarray(x, dtype=np.uint64)
    with np.errstate(over="ignore"):
        z = x + np.uint64(0x9E3779B97F4A7C15)
        z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
        z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    return z ^ (z >> np.uint64(31))


def unit(h):
    return ((h >> np.uint64(40)).astype(np.float32) / np.float32(1 << 23) - np.float32(1.0)).astype(np.float32)


def dims2(n):
    # benches/src/shapes.rs: the squarest [r, c] with r * c == n (powers of two), r <= c
    k = n.bit_length() - 1
    r = 1 << (k // 2)
    return r, n // r


def csr(rows, per_row):
    nnz = rows * per_row
    j = np.arange(nnz, dtype=np.uint64)
    col = (splitmix64(j) % np.uint64(rows)).astype(np.int64)
    col = np.sort(col.reshape(rows, per_row), axis=1).reshape(-1)
    values = unit(splitmix64(j + np.uint64(nnz)))
    crow = np.arange(rows + 1, dtype=np.int64) * per_row
    return sp.csr_matrix((values, col, crow), shape=(rows, rows))


def timed(f, repeat, setup=None):
    ts = []
    for i in range(repeat + 1):
        arg = setup() if setup else None
        t = time.perf_counter()
        f(arg)
        dt = time.perf_counter() - t
        if i > 0:
            ts.append(dt)
    return statistics.median(ts)


def report(key, nbytes, secs, peer="scipy"):
    print(f"{key:<48} {peer:<6} {secs * 1e3:9.2f} ms  {nbytes / secs / 1e9:7.2f} GB/s", flush=True)


def torch_csr(m, index):
    """The scipy matrix `m` as a torch CSR tensor with `index` (torch.int32/int64) components."""
    crow = torch.from_numpy(m.indptr.astype(np.int64)).to(index)
    col = torch.from_numpy(m.indices.astype(np.int64)).to(index)
    return torch.sparse_csr_tensor(crow, col, torch.from_numpy(m.data), size=m.shape, check_invariants=False)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--repeat", type=int, default=9)
    ap.add_argument("--filter", default="")
    a = ap.parse_args()
    assert int(splitmix64(0)) == 0xE220A8397B1DCDAF
    s = 4 if a.quick else 0
    print(f"scipy {scipy.__version__}, numpy {np.__version__}", end="")
    print(f", torch {torch.__version__} ({torch.get_num_threads()} threads)" if torch else ", no torch")
    want = lambda key: not a.filter or any(p in key for p in a.filter.split(","))

    rows, per_row = 1 << (20 - s), 16
    for index in (8, 4):
        key = f"spmv/f32/{rows}x{rows}/nnz{rows * per_row}" + ("/i32" if index == 4 else "")
        if want(key):
            m = csr(rows, per_row)
            x = unit(splitmix64(np.arange(rows, dtype=np.uint64)))
            nbytes = rows * per_row * (8 + index) + rows * (4 + index)
            report(key, nbytes, timed(lambda _: m @ x, a.repeat))
            if torch:
                t, tx = torch_csr(m, torch.int32 if index == 4 else torch.int64), torch.from_numpy(x)
                report(key, nbytes, timed(lambda _: torch.mv(t, tx), a.repeat), "torch")
    rows = 1 << (18 - s)
    for n, index in ((16, 8), (16, 4), (64, 8)):
        key = f"spmm/f32/{rows}x{rows}x{n}/nnz{rows * per_row}" + ("/i32" if index == 4 else "")
        if want(key):
            m = csr(rows, per_row)
            b = np.ascontiguousarray(unit(splitmix64(np.arange(rows * n, dtype=np.uint64))).reshape(rows, n))
            nbytes = rows * per_row * (4 + index + 4 * n) + rows * (index + 4 * n)
            report(key, nbytes, timed(lambda _: m @ b, a.repeat))
            if torch:
                t, tb = torch_csr(m, torch.int32 if index == 4 else torch.int64), torch.from_numpy(b)
                report(key, nbytes, timed(lambda _: torch.sparse.mm(t, tb), a.repeat), "torch")
    nbytes = 256 << (20 - s)
    r, c = dims2(nbytes // 4)
    for permille in (10, 100):
        key = f"to_dense/f32/{r}x{c}/{permille / 10:g}pct"
        if want(key):
            pos = np.flatnonzero(splitmix64(np.arange(r * c, dtype=np.uint64)) % np.uint64(1000) < np.uint64(permille))
            vals = unit(splitmix64(~pos.astype(np.uint64)))
            coo = sp.coo_matrix((vals, (pos // c, pos % c)), shape=(r, c))
            report(key, nbytes + len(pos) * 20, timed(lambda _: coo.toarray(), a.repeat))
            if torch:
                idx = torch.from_numpy(np.stack([pos // c, pos % c]).astype(np.int64))
                t = torch.sparse_coo_tensor(idx, torch.from_numpy(vals), (r, c), is_coalesced=True, check_invariants=False)
                report(key, nbytes + len(pos) * 20, timed(lambda _: t.to_dense(), a.repeat), "torch")
    nnz, side = 1 << (24 - s), 1 << (12 - s // 2)
    key = f"coalesce/f32/{side}x{side}/nnz{nnz}"
    if want(key):
        j = np.arange(nnz, dtype=np.uint64)
        row = (splitmix64(j) % np.uint64(side)).astype(np.int64)
        col = (splitmix64(j + np.uint64(nnz)) % np.uint64(side)).astype(np.int64)
        vals = unit(splitmix64(np.uint64(2 * nnz) + j))
        base = sp.coo_matrix((vals, (row, col)), shape=(side, side))

        def fresh():
            m = base.copy()
            m.has_canonical_format = False
            return m

        secs = timed(lambda m: m.sum_duplicates(), a.repeat, setup=fresh)
        report(key, nnz * 40, secs)
        if torch:
            t = torch.sparse_coo_tensor(torch.from_numpy(np.stack([row, col])), torch.from_numpy(vals), (side, side), check_invariants=False)
            report(key, nnz * 40, timed(lambda _: t.coalesce(), a.repeat), "torch")


if __name__ == "__main__":
    main()
