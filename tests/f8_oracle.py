#!/usr/bin/env python3
"""Checks tensor-ops' 8-bit floats against ml_dtypes, with PyTorch's E4M3 overflow.

Reads the files written by `cargo run -p tensor-tests --example f8_oracle -- DIR` and
recomputes every result with ml_dtypes (float8_e4m3fn, float8_e5m2; it rounds an f64
through f32 as PyTorch does): the casts from f32 and f64, the decode of every code, and
add/mul of every pair of codes (computed in f32 by numpy, then cast). One rule differs:
ml_dtypes makes an E4M3 value that rounds past 448 (and infinity) NaN, where PyTorch 2.15
saturates it to +-448 (measured with its PyPI wheel; tensor-core/src/f8.rs keeps the
codes), so where a number's ml_dtypes code is NaN the PyTorch code 0x7e with the sign is
expected. A number must have that code; a NaN must be a NaN, of the same sign for a cast
(ml_dtypes writes E5M2's NaN as 0x7e, PyTorch and we as 0x7f: both are NaN). The sign of a
NaN from arithmetic is the operand order's and is not compared. Exits 1 on any
disagreement.

    python3 tests/f8_oracle.py DIR
"""
import os
import sys

import ml_dtypes
import numpy as np

np.seterr(all="ignore")

FORMATS = {"e4m3": ml_dtypes.float8_e4m3fn, "e5m2": ml_dtypes.float8_e5m2}


def is_nan(codes, name):
    mag = codes & 0x7F
    return mag == 0x7F if name == "e4m3" else mag > 0x7C


def pytorch_codes(values, name):
    """ml_dtypes' codes of `values`, with PyTorch's saturation of E4M3 overflow."""
    want = values.astype(FORMATS[name]).view(np.uint8)
    if name == "e4m3":
        over = is_nan(want, name) & ~np.isnan(values)
        want = np.where(over, np.where(np.signbit(values), 0xFE, 0x7E), want).astype(np.uint8)
    return want


def compare(what, name, ours, want, signed_nan):
    """Mismatch descriptions of the codes `ours` against `want`."""
    nan_o, nan_w = is_nan(ours, name), is_nan(want, name)
    bad = np.where(nan_w, ~nan_o, ours != want)
    if signed_nan:
        bad |= nan_w & nan_o & ((ours & 0x80) != (want & 0x80))
    return [f"{what} {name}: element {i}: ours {ours[i]:#04x}, ml_dtypes {want[i]:#04x}" for i in np.flatnonzero(bad)]


def read(d, f, dtype):
    return np.fromfile(os.path.join(d, f), dtype=dtype)


def main(d):
    problems, checked = [], 0
    x32 = read(d, "sources_f32.bin", "<f4")
    x64 = read(d, "sources_f64.bin", "<f8")
    codes = np.arange(256, dtype=np.uint8)
    pairs = np.arange(65536, dtype=np.uint32)
    a, b = (pairs >> 8).astype(np.uint8), (pairs & 0xFF).astype(np.uint8)
    for name, f8 in FORMATS.items():
        for source, x in (("f32", x32), ("f64", x64)):
            ours = read(d, f"cast_{source}_{name}.bin", np.uint8)
            problems += compare(f"cast from {source}", name, ours, pytorch_codes(x, name), True)
            checked += len(ours)
        ours = read(d, f"decode_{name}.bin", "<f4")
        want = codes.view(f8).astype(np.float32)
        nan = np.isnan(want)
        bad = np.where(nan, ~np.isnan(ours) | (np.signbit(ours) != np.signbit(want)), ours.view(np.uint32) != want.view(np.uint32))
        problems += [f"decode {name}: code {c:#04x}: ours {ours[c]!r}, ml_dtypes {want[c]!r}" for c in np.flatnonzero(bad)]
        checked += 256
        fa, fb = a.view(f8).astype(np.float32), b.view(f8).astype(np.float32)
        for op, want in (("add", fa + fb), ("mul", fa * fb)):
            ours = read(d, f"{op}_{name}.bin", np.uint8)
            problems += compare(op, name, ours, pytorch_codes(want, name), False)
            checked += len(ours)
    for p in problems[:50]:
        print(p)
    print(f"f8_oracle: {checked} results checked against ml_dtypes {ml_dtypes.__version__}, {len(problems)} disagree")
    return 1 if problems or not checked else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
