#!/usr/bin/env python3
"""Checks tensor-ops' reductions against numpy.

Reads the JSON lines written by `cargo run -p tensor-tests --example numpy_oracle -- FILE`
(inputs, then each reduction's result or error) and recomputes every result with numpy in
float64 (int64 for integer sums and products), following the reduction contract of issue 11:
result dtypes, which calls are errors, NaN and empty-extent rules, var/std's correction,
softmax max-subtracted. Values must agree within the result dtype's precision; integer,
bool, argmax/argmin, amax/amin results exactly. Exits 1 on any disagreement.

    python3 tests/numpy_oracle.py FILE
"""
import json
import multiprocessing
import os
import sys

import numpy as np

np.seterr(all="ignore")

FLOAT = {"F8E4M3", "F8E5M2", "F16", "BF16", "F32", "F64"}
# Relative precision a result of each float dtype is held to (the 8-bit floats: half an ulp
# of 3 or 2 mantissa bits, and a little for the f32 computation before the one rounding).
TOLERANCE = {"F8E4M3": 0.07, "F8E5M2": 0.13, "F16": 2e-3, "BF16": 1.6e-2, "F32": 2e-6, "F64": 1e-12}
# Absolute precision near zero: half the smallest subnormal of the 8-bit floats.
ABSOLUTE = {"F8E4M3": 2.0**-10, "F8E5M2": 2.0**-17}
# The largest finite value of the dtype a float product is computed in (f8/f16/bf16 in f32).
COMPUTE_MAX = {"F8E4M3": 3.4e38, "F8E5M2": 3.4e38, "F16": 3.4e38, "BF16": 3.4e38, "F32": 3.4e38, "F64": 1.7e308}


def result_dtype(op, dtype):
    base = op[:-4] if op.endswith("_all") else op
    if base in ("sum", "prod"):
        return dtype if dtype in FLOAT else "I64"
    if base in ("mean", "var", "std", "logsumexp", "softmax", "log_softmax"):
        return dtype if dtype in FLOAT else "F32"
    if base in ("amax", "amin"):
        return dtype
    if base in ("argmax", "argmin"):
        return "I64"
    return "Bool"


def reference(r, x):
    """numpy's result for record `r` on input `x` (float64, logical shape), or "err"."""
    op, dtype, shape, keepdim = r["op"], r["dtype"], r["shape"], r["keepdim"]
    nd = len(shape)
    dims = r["dims"]
    if op.endswith("_all"):
        op, dims, keepdim = op[:-4], list(range(nd)), False
    elif op in ("argmax", "argmin", "softmax", "log_softmax"):
        if dims[0] >= nd:
            return "err"
    elif not dims or len(set(dims)) != len(dims) or any(d >= nd for d in dims):
        return "err"
    axes = tuple(dims)
    n = int(np.prod([shape[d] for d in dims]))
    if op in ("amax", "amin", "argmax", "argmin") and n == 0:
        return "err"
    kept_shape = np.sum(x, axis=axes, keepdims=keepdim).shape
    if dtype not in FLOAT and op in ("mean", "var", "std", "logsumexp", "softmax", "log_softmax"):
        x = x.astype(np.float32).astype(np.float64)  # computed in f32
    integer = dtype not in FLOAT
    if op == "sum":
        return np.sum(x.astype(np.int64) if integer else x, axis=axes, keepdims=keepdim)
    if op == "prod":
        return np.prod(x.astype(np.int64) if integer else x, axis=axes, keepdims=keepdim)
    if op == "mean":
        return np.sum(x, axis=axes, keepdims=keepdim) / n if n else np.full(kept_shape, np.nan)
    if op == "amax":
        return np.max(x, axis=axes, keepdims=keepdim)
    if op == "amin":
        return np.min(x, axis=axes, keepdims=keepdim)
    if op == "all":
        return np.all(x != 0, axis=axes, keepdims=keepdim)
    if op == "any":
        return np.any(x != 0, axis=axes, keepdims=keepdim)
    if op == "logsumexp":
        if n == 0:
            return np.full(kept_shape, -np.inf)
        m = np.max(x, axis=axes, keepdims=True)
        finite_m = np.where(np.isinf(m), 0, m)
        s = np.log(np.sum(np.exp(x - finite_m), axis=axes, keepdims=True)) + finite_m
        s = np.where(np.isinf(m) & ~np.isnan(s), m, s)  # ±∞ maxima: the result is that ∞
        return s if keepdim else np.squeeze(s, axis=axes)
    if op in ("var", "std"):
        if n == 0:
            return np.full(kept_shape, np.nan)
        mean = np.mean(x, axis=axes, keepdims=True)
        v = np.sum((x - mean) ** 2, axis=axes, keepdims=keepdim) / max(n - r["corr"], 0)
        return np.sqrt(v) if op == "std" else v
    if op == "argmax":
        return np.argmax(x, axis=dims[0], keepdims=keepdim)  # first NaN, else first maximum
    if op == "argmin":
        return np.argmin(x, axis=dims[0], keepdims=keepdim)
    d = dims[0]
    m = np.max(x, axis=d, keepdims=True) if shape[d] else 0.0
    e = np.exp(x - m)
    s = np.sum(e, axis=d, keepdims=True)
    return e / s if op == "softmax" else (x - m) - np.log(s)


def agree(r, x, want, got):
    """Element-wise agreement of `got` with numpy's `want` (both float64 arrays)."""
    dtype = r["odtype"]
    if dtype not in FLOAT:
        return got == want
    if dtype == "F8E4M3":
        want = np.clip(want, -448.0, 448.0)  # E4M3 ("fn") saturates, infinities too
    elif dtype == "F8E5M2":  # E5M2 overflows to infinity from the midpoint 61440 up
        want = np.where(np.abs(want) >= 61440.0, np.sign(want) * np.inf, np.clip(want, -57344.0, 57344.0))
    elif dtype == "F16":
        want = want.astype(np.float16).astype(np.float64)
    elif dtype in ("F32", "BF16"):
        want = want.astype(np.float32).astype(np.float64)
    tol = TOLERANCE[dtype]
    finite = np.abs(x[np.isfinite(x)])
    base = r["op"].removesuffix("_all")
    if base in ("sum", "mean"):
        slack = tol * finite.sum()  # blocked/pairwise order: error relative to Σ|x|
    elif base in ("logsumexp", "log_softmax", "softmax") and finite.size:
        slack = 4 * tol * max(1.0, finite.max())  # x − max rounds at |x|'s magnitude
    else:
        slack = tol * 1e-3
    slack += ABSOLUTE.get(dtype, 0.0)
    ok = (np.isnan(got) & np.isnan(want)) | (got == want) | (np.abs(got - want) <= tol * np.abs(want) + slack)
    if base == "prod" and np.any(x == 0):
        # A zero next to partial products that overflow the compute dtype: 0 or NaN by order.
        big = np.prod(np.where(np.isfinite(x) & (x != 0), np.abs(x), 1.0)) > COMPUTE_MAX[r["dtype"]]
        ok |= big & (np.isnan(got) | (got == 0))
    if base == "prod":
        # Partial products that can both underflow to 0 and overflow to ±∞ in the compute
        # dtype (f32 for the narrow floats) meet as 0 · ∞ = NaN in some orders (blocked
        # lanes), ±∞ or 0 in others; numpy's f64 order is one of them.
        fx = np.abs(x[np.isfinite(x) & (x != 0)])
        tiny = 5e-324 if r["dtype"] == "F64" else 1.4e-45
        if np.prod(fx[fx < 1]) < tiny and np.prod(fx[fx > 1]) > COMPUTE_MAX[r["dtype"]]:
            ok |= np.isnan(got) | np.isinf(got) | (got == 0)
    return ok


def check(r, x):
    """The problem with record `r` (computed from input `x`), or None when numpy agrees."""
    want = reference(r, x)
    if isinstance(want, str):
        return None if "err" in r else "an error was due, got a result"
    if "err" in r:
        return f"unexpected error: {r['err']}"
    if r["odtype"] != result_dtype(r["op"], r["dtype"]):
        return f"dtype {r['odtype']}, want {result_dtype(r['op'], r['dtype'])}"
    if list(r["oshape"]) != list(np.shape(want)):
        return f"shape {r['oshape']}, want {list(np.shape(want))}"
    if not r["out_ok"]:
        return "the _out form into a poisoned tensor wrote other values"
    want = np.asarray(want, dtype=np.float64)
    got = np.array(r["y"], dtype=np.float64).reshape(want.shape)
    ok = agree(r, x, want, got)
    if not np.all(ok):
        i = tuple(np.argwhere(~ok)[0])
        return f"at {i}: got {got[i]}, want {want[i]}"
    return None


def check_group(group):
    """(records checked, mismatch lines) of one input and the records computed from it."""
    x_line, record_lines = group
    xr = json.loads(x_line)
    x = np.array(xr["x"], dtype=np.float64)
    mismatches = []
    for line in record_lines:
        r = json.loads(line)
        if r["xid"] != xr["xid"]:
            raise ValueError(f"record of input {r['xid']} after input {xr['xid']}: the file is out of order")
        problem = check(r, x.reshape(r["shape"]))
        if problem:
            case = f'{r["op"]} {r["dtype"]} shape {r["shape"]} dims {r["dims"]} keepdim {r["keepdim"]} correction {r["corr"]}'
            mismatches.append(f"MISMATCH {case}: {problem}")
    return len(record_lines), mismatches


def groups(path):
    """Each input line with the record lines that follow it (the writer puts every input
    right before the records computed from it)."""
    x_line, records = None, []
    for line in open(path):
        if line.startswith('{"xid"'):
            if x_line is not None:
                yield x_line, records
            x_line, records = line, []
        elif x_line is None:
            raise ValueError("a record before any input: the file is out of order")
        else:
            records.append(line)
    if x_line is not None:
        yield x_line, records


def main(path):
    total, bad = 0, 0
    # One worker per core: numpy's per-call overhead on these small arrays is the cost.
    with multiprocessing.Pool(os.cpu_count() or 1) as pool:
        for n, mismatches in pool.imap(check_group, groups(path), chunksize=8):
            total += n
            for m in mismatches:
                bad += 1
                if bad <= 50:
                    print(m)
    print(f"numpy_oracle: {total} results checked, {bad} disagree")
    return 1 if bad or not total else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
