"""PyTorch on the same GPU, the same cases as tensor-ops' cuda-perf (benches/src/cuda/suite.rs
and the GPU-only cases of benches/src/cuda/extra.rs),
timed the same way: CUDA events around one call after an L2 flush, median of 25 after 3
warm-ups, GB/s = bytes read + written (each element once), ratio = GB/s over a device-to-device
memcpy of the same array size measured in this run.

    python3 torch_peers.py [MiB ...]     (default: 1024)
Prints one line per case: key, GB/s, ratio; then the spmv/spmm cases once (cuSPARSE through
torch's sparse CSR tensors; SPARSE=0 skips them). COMPILE=0 skips torch.compile cases;
FILTER=a,b keeps the cases whose key contains a or b (cuda-perf's --filter rule).
"""
import os, sys, time, math
import torch

RUNS = 25
dev = torch.device("cuda")
props = torch.cuda.get_device_properties(0)
l2 = getattr(props, "L2_cache_size", 50 << 20)
flush_buf = torch.empty(2 * l2 // 4 + 1024, dtype=torch.float32, device=dev)

def dims2(n):
    r = 1
    while (r * 2) * (r * 2) <= n and (n // (r * 2)) * (r * 2) == n:
        r *= 2
    return [r, n // r]

def dims3(n):
    x = 1
    while (x * 2) ** 3 <= n and (n // (x * 2)) * (x * 2) == n:
        x *= 2
    y, z = dims2(n // x)
    return sorted([x, y, z], reverse=True)

def timed(f):
    for _ in range(3):
        f()
    torch.cuda.synchronize()
    ts = []
    for _ in range(RUNS):
        flush_buf.zero_()
        s = torch.cuda.Event(enable_timing=True); e = torch.cuda.Event(enable_timing=True)
        s.record(); f(); e.record()
        e.synchronize()
        ts.append(s.elapsed_time(e) / 1e3)
    ts.sort()
    return ts[len(ts) // 2]

def rnd(shape, dt):
    if dt.is_floating_point:
        return torch.rand(shape, device=dev, dtype=torch.float32).to(dt) * 4 - 2
    return torch.randint(-100, 100, shape, device=dev, dtype=dt)

DT = {"f32": torch.float32, "f16": torch.float16, "i64": torch.int64}
SIZE = {"f32": 4, "f16": 2, "i64": 8}
# pattern -> bytes moved as a multiple of the array bytes
PAT = {"copy": 2, "read": 1, "readrows": 1, "fill": 1, "add": 3, "scale": 2, "triad": 4, "read2": 2}

def cases(nbytes):
    out = []
    def add(name, dt, pattern, shape, make):
        out.append((name, dt, pattern, shape, make))
    for dt in ["f32"]:
        n = nbytes // SIZE[dt]
        s2 = dims2(n); s3 = dims3(n)
        add("copy", dt, "copy", [n], lambda n=n, dt=dt: (lambda a, o: (lambda: o.copy_(a)))(rnd([n], DT[dt]), torch.empty(n, device=dev, dtype=DT[dt])))
        add("transpose", dt, "copy", s2, lambda s2=s2, dt=dt: (lambda v: (lambda: v.contiguous()))(rnd(s2, DT[dt]).t()))
        add("permute201", dt, "copy", s3, lambda s3=s3, dt=dt: (lambda v: (lambda: v.contiguous()))(rnd(s3, DT[dt]).permute(2, 0, 1)))
        add("slice_cols", dt, "copy", [s2[0], 2 * s2[1]], lambda s2=s2, dt=dt: (lambda v: (lambda: v.contiguous()))(rnd([s2[0], 2 * s2[1]], DT[dt])[:, ::2]))
        add("fill", dt, "fill", [n], lambda n=n, dt=dt: (lambda o: (lambda: o.fill_(1.5)))(torch.empty(n, device=dev, dtype=DT[dt])))
        add("add", dt, "add", [n], lambda n=n, dt=dt: (lambda a, b: (lambda: a + b))(rnd([n], DT[dt]), rnd([n], DT[dt])))
        add("add_out", dt, "add", [n], lambda n=n, dt=dt: (lambda a, b, o: (lambda: torch.add(a, b, out=o)))(rnd([n], DT[dt]), rnd([n], DT[dt]), torch.empty(n, device=dev, dtype=DT[dt])))
        add("add_transposed", dt, "add", s2, lambda s2=s2, dt=dt: (lambda a, b: (lambda: a + b))(rnd(s2, DT[dt]), rnd([s2[1], s2[0]], DT[dt]).t()))
        add("exp_out", dt, "scale", [n], lambda n=n, dt=dt: (lambda a, o: (lambda: torch.exp(a, out=o)))(rnd([n], DT[dt]), torch.empty(n, device=dev, dtype=DT[dt])))
        add("relu_out", dt, "scale", [n], lambda n=n, dt=dt: (lambda a, o: (lambda: torch.clamp_min(a, 0.0, out=o)))(rnd([n], DT[dt]), torch.empty(n, device=dev, dtype=DT[dt])))
        add("silu", dt, "scale", [n], lambda n=n, dt=dt: (lambda a: (lambda: torch.nn.functional.silu(a)))(rnd([n], DT[dt])))
        red = [
            ("sum_last", "read", lambda a: a.sum(1)), ("sum_first", "readrows", lambda a: a.sum(0)),
            ("amax_last", "read", lambda a: a.amax(1)), ("amax_first", "readrows", lambda a: a.amax(0)),
            ("argmax_last", "read", lambda a: a.argmax(1)), ("argmax_first", "read", lambda a: a.argmax(0)),
            ("var_last", "read", lambda a: a.var(1)), ("var_first", "read", lambda a: a.var(0)),
            ("logsumexp_last", "read", lambda a: torch.logsumexp(a, 1)),
            ("softmax_last", "copy", lambda a: torch.softmax(a, 1)),
        ]
        for name, pat, f in red:
            add(name, dt, pat, s2, lambda s2=s2, dt=dt, f=f: (lambda a: (lambda: f(a)))(rnd(s2, DT[dt])))
        add("eager_relu_mul_add", dt, "triad", [n], lambda n=n, dt=dt: (lambda a, b, c: (lambda: torch.relu(a * b + c)))(rnd([n], DT[dt]), rnd([n], DT[dt]), rnd([n], DT[dt])))
        add("eager_sq_diff_sum", dt, "read2", [n], lambda n=n, dt=dt: (lambda a, b: (lambda: ((a - b) ** 2).sum()))(rnd([n], DT[dt]), rnd([n], DT[dt])))
        if os.environ.get("COMPILE", "1") != "0":
            def triad(a, b, c):
                return torch.relu(a * b + c)
            def sqd(a, b):
                return ((a - b) ** 2).sum()
            ct = torch.compile(triad, dynamic=False)
            cs = torch.compile(sqd, dynamic=False)
            add("compiled_relu_mul_add", dt, "triad", [n], lambda n=n, dt=dt: (lambda a, b, c: (lambda: ct(a, b, c)))(rnd([n], DT[dt]), rnd([n], DT[dt]), rnd([n], DT[dt])))
            add("compiled_sq_diff_sum", dt, "read2", [n], lambda n=n, dt=dt: (lambda a, b: (lambda: cs(a, b)))(rnd([n], DT[dt]), rnd([n], DT[dt])))
    for dt in ["f16", "i64"]:
        n = nbytes // SIZE[dt]
        s2 = dims2(n)
        add("transpose", dt, "copy", s2, lambda s2=s2, dt=dt: (lambda v: (lambda: v.contiguous()))(rnd(s2, DT[dt]).t()))
        add("add_out", dt, "add", [n], lambda n=n, dt=dt: (lambda a, b, o: (lambda: torch.add(a, b, out=o)))(rnd([n], DT[dt]), rnd([n], DT[dt]), torch.empty(n, device=dev, dtype=DT[dt])))
    # the GPU-only cases (benches/src/cuda/extra.rs): same keys, shapes and bytes
    def f32data(shape, dt):
        return (torch.rand(shape, device=dev, dtype=torch.float32) * 4 - 2).to(dt)
    XDT = {"u8": torch.uint8, "i8": torch.int8, "f16": torch.float16, "f32": torch.float32,
           "f8e4m3": torch.float8_e4m3fn, "f8e5m2": torch.float8_e5m2}
    XSZ = {"u8": 1, "i8": 1, "f16": 2, "f32": 4, "f8e4m3": 1, "f8e5m2": 1}
    # (PyTorch has no add or relu kernel for the 8-bit floats: those cases print ERROR)
    for dt in ["u8", "i8", "f16", "f8e4m3", "f8e5m2"]:
        m = nbytes // XSZ[dt]
        add(f"add_out", dt, ("bytes", 3 * m * XSZ[dt]), [m], lambda m=m, dt=dt: (lambda a, b, o: (lambda: torch.add(a, b, out=o)))(f32data([m], XDT[dt]), f32data([m], XDT[dt]), torch.empty(m, device=dev, dtype=XDT[dt])))
        add(f"relu_out", dt, ("bytes", 2 * m * XSZ[dt]), [m], lambda m=m, dt=dt: (lambda a, o: (lambda: torch.clamp_min(a, 0, out=o)))(f32data([m], XDT[dt]), torch.empty(m, device=dev, dtype=XDT[dt])))
    for src, dst in [("f32", "f16"), ("f16", "f32"), ("f32", "u8"), ("u8", "f32"),
                     ("f32", "f8e4m3"), ("f8e4m3", "f32"), ("f32", "f8e5m2"), ("f8e5m2", "f32")]:
        m = nbytes // max(XSZ[src], XSZ[dst])
        add(f"cast_{dst}", src, ("bytes", m * (XSZ[src] + XSZ[dst])), [m], lambda m=m, src=src, dst=dst: (lambda a: (lambda: a.to(XDT[dst])))(f32data([m], XDT[src])))
    f = nbytes // 4
    square = dims2(f)[1]
    for cols in [32, 128, 1024, 4096, 16384, 65536]:
        if cols <= f and cols != square:
            add("softmax_last", "f32", ("bytes", 2 * (f // cols) * cols * 4), [f // cols, cols], lambda f=f, cols=cols: (lambda a: (lambda: torch.softmax(a, 1)))(f32data([f // cols, cols], torch.float32)))
    if f >= 1024:
        add("log_softmax_last", "f32", ("bytes", 2 * (f // 1024) * 1024 * 4), [f // 1024, 1024], lambda f=f: (lambda a: (lambda: torch.log_softmax(a, 1)))(f32data([f // 1024, 1024], torch.float32)))
    if f >= 4096:
        h = nbytes // 2
        add("softmax_last", "f16", ("bytes", 2 * (h // 4096) * 4096 * 2), [h // 4096, 4096], lambda h=h: (lambda a: (lambda: torch.softmax(a, 1)))(f32data([h // 4096, 4096], torch.float16)))
    for e in [2, 4, 8]:
        add("sum_last", "f32", ("bytes", (f // e) * e * 4), [f // e, e], lambda f=f, e=e: (lambda a: (lambda: a.sum(1)))(f32data([f // e, e], torch.float32)))
    add("argmax_last", "f32", ("bytes", f * 4), [1, f], lambda f=f: (lambda a: (lambda: a.argmax(1)))(f32data([1, f], torch.float32)))
    sq = dims2(f)
    add("add_row", "f32", ("bytes", 2 * f * 4 + sq[1] * 4), sq, lambda sq=sq: (lambda a, b: (lambda: a + b))(f32data(sq, torch.float32), f32data([sq[1]], torch.float32)))
    add("mul_column", "f32", ("bytes", 2 * f * 4 + sq[0] * 4), sq, lambda sq=sq: (lambda a, b: (lambda: a * b))(f32data(sq, torch.float32), f32data([sq[0], 1], torch.float32)))
    u = nbytes
    add("transpose", "u8", ("bytes", 2 * u), dims2(u), lambda u=u: (lambda v: (lambda: v.contiguous()))(f32data(dims2(u), torch.uint8).t()))
    return out

def sparse_cases():
    """cuda-perf's spmv/spmm cases (benches/src/sparse.rs, cuda_set): CSR matrices with 16
    entries a row at uniformly random, sorted columns, i64 or i32 indices, f32 values; the
    product through cuSPARSE (torch.mv / torch.mm on a sparse CSR tensor). Bytes as ours:
    each entry's value, column and gathered operand row, each row's pointer and result."""
    out = []
    def csr(rows, per_row, index):
        nnz = rows * per_row
        col = torch.randint(0, rows, (rows, per_row), device=dev).sort(dim=1).values.flatten()
        crow = torch.arange(rows + 1, device=dev) * per_row
        it = torch.int32 if index == 4 else torch.int64
        vals = torch.rand(nnz, device=dev, dtype=torch.float32)
        return torch.sparse_csr_tensor(crow.to(it), col.to(it), vals, size=(rows, rows))
    for rows, index in [(1 << 20, 8), (1 << 20, 4)]:
        nnz = rows * 16
        key = f"spmv/f32/{rows}x{rows}/nnz{nnz}" + ("/i32" if index == 4 else "")
        moved = nnz * (4 + index + 4) + rows * (index + 4)
        out.append((key, moved, lambda rows=rows, index=index: (lambda a, x: (lambda: torch.mv(a, x)))(csr(rows, 16, index), torch.rand(rows, device=dev))))
    for rows, n, index in [(1 << 18, 16, 8), (1 << 18, 16, 4), (1 << 18, 64, 8)]:
        nnz = rows * 16
        key = f"spmm/f32/{rows}x{rows}x{n}/nnz{nnz}" + ("/i32" if index == 4 else "")
        moved = nnz * (4 + index + 4 * n) + rows * (index + 4 * n)
        out.append((key, moved, lambda rows=rows, n=n, index=index: (lambda a, b: (lambda: torch.mm(a, b)))(csr(rows, 16, index), torch.rand(rows, n, device=dev))))
    return out

def report(key, moved, make, limit):
    """Times the call `make()` builds and prints its line (or the error, and goes on)."""
    try:
        t0 = time.time()
        secs = timed(make())
        gbps = moved / secs / 1e9
        print(f"{key} {gbps:.1f} GB/s ratio {gbps / limit:.3f}  (setup+time {time.time() - t0:.1f}s)", flush=True)
    except Exception as e:  # report, keep going
        print(f"{key} ERROR {type(e).__name__}: {str(e)[:200]}", flush=True)
    torch.cuda.empty_cache()

def main():
    sizes = [int(x) for x in sys.argv[1:]] or [1024]
    keep = [k for k in os.environ.get("FILTER", "").split(",") if k]
    print(f"torch {torch.__version__} on {props.name}, L2 {l2 >> 20} MiB", flush=True)
    for mib in sizes:
        nbytes = mib << 20
        src = torch.empty(nbytes, dtype=torch.uint8, device=dev); dst = torch.empty_like(src)
        mt = timed(lambda: dst.copy_(src))
        limit = 2 * nbytes / mt / 1e9
        print(f"memcpy_d2d/u8/{nbytes} {limit:.1f} GB/s ratio 1.000", flush=True)
        del src, dst
        for name, dt, pat, shape, make in cases(nbytes):
            key = f"{name}/{dt}/{'x'.join(map(str, shape))}"
            if not keep or any(k in key for k in keep):
                report(key, pat[1] if isinstance(pat, tuple) else PAT[pat] * nbytes, make, limit)
    # the sparse cases have one size (2^24 entries); their ratio is over the largest memcpy
    if os.environ.get("SPARSE", "1") != "0":
        for key, moved, make in sparse_cases():
            if not keep or any(k in key for k in keep):
                report(key, moved, make, limit)

main()
