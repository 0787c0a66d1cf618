"""PyTorch's quantized CPU kernels (fbgemm) on the shapes of cpu-perf's qint8 cases.

Run next to `cpu-perf --filter qint8` (the same machine, back to back) and compare GB/s over
the same bytes (cpu-perf's count: quantize / dequantize move 4 + 1 bytes per element, add
reads two and writes one byte, relu reads one and writes one):

    PYTHONPATH=<torch>:<numpy> python3 benches/python/quantized_peers.py [MiB of the f32 input]

Prints one line per case: key, best and median seconds of 7 calls, GB/s of the best.
"""

import sys
import time
import warnings

import torch

warnings.filterwarnings("ignore")  # quantized tensor creation is deprecated in 2.x, still works
torch.set_num_threads(2)
torch.backends.quantized.engine = "fbgemm"


def timed(f, reps=7):
    f()
    ts = []
    for _ in range(reps):
        t0 = time.perf_counter()
        f()
        ts.append(time.perf_counter() - t0)
    ts.sort()
    return ts[0], ts[len(ts) // 2]


def main():
    mib = int(sys.argv[1]) if len(sys.argv) > 1 else 256
    # cpu-perf's qint8 cases hold the output array (1 byte per element) to `mib` MiB.
    n = (mib << 20)
    side = 1 << ((n.bit_length() - 1) // 2)
    rows, cols = side, n // side
    x = torch.randn(rows, cols) * 2
    scale, zp = 0.05, 0
    q = torch.quantize_per_tensor(x, scale, zp, torch.qint8)
    q2 = torch.quantize_per_tensor(x.flip(0), scale, zp, torch.qint8)
    scales = torch.full((rows,), scale, dtype=torch.float64)
    zps = torch.zeros(rows, dtype=torch.int64)
    cases = [
        ("cast_from_f32/qint8", 5, lambda: torch.quantize_per_tensor(x, scale, zp, torch.qint8)),
        ("quantize_per_channel/qint8", 5, lambda: torch.quantize_per_channel(x, scales, zps, 0, torch.qint8)),
        ("cast_to_f32/qint8", 5, lambda: q.dequantize()),
        ("add/qint8", 3, lambda: torch.ops.quantized.add(q, q2, 0.1, zp)),
        ("relu/qint8", 2, lambda: torch.relu(q)),
    ]
    print(f"torch {torch.__version__}, engine {torch.backends.quantized.engine}, threads {torch.get_num_threads()}, shape [{rows}, {cols}]")
    for key, bytes_per, f in cases:
        best, med = timed(f)
        print(f"{key}/{rows}x{cols}  best {best:.4f} s  median {med:.4f} s  {bytes_per * n / best / 1e9:.2f} GB/s")


if __name__ == "__main__":
    main()
