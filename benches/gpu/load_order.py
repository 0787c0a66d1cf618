#!/usr/bin/env python3
"""Which generated kernels wait on one global load before issuing the next.

Reads the SASS of cubins written by `kernel_registers --cubin DIR` (through `nvdisasm`,
PyPI `nvidia-cuda-nvdisasm`) and, for each kernel, lists its vector loads (`LDG.E.128`, or
with WIDE=1 every load wider than 2 bytes) and how many of them have their result read
before the kernel's next such load is issued. A nonzero count in a map's main loop means
the thread's loads run one after another instead of together (fewer bytes in flight).
The count also flags the last load of one loop before the next loop's first: read the
SASS of a flagged kernel before concluding.

    pip install --target /tmp/nvdis nvidia-cuda-nvdisasm
    cargo run -p tensor-tests --example kernel_registers -- --cubin /tmp/cubins map_contig
    NVDISASM=$(find /tmp/nvdis -name nvdisasm -type f) python3 benches/gpu/load_order.py /tmp/cubins/*.cubin
"""
import os
import re
import subprocess
import sys

NVDISASM = os.environ.get("NVDISASM", "nvdisasm")
WIDE = os.environ.get("WIDE") == "1"
LOAD = re.compile(r"(@!?P\d\s+)?LDG\.E((?:\.[A-Z]\w*)*)(\.128|\.64)?\s+(R\d+),")


def registers(first, width):
    n = {".128": 4, ".64": 2}.get(width or "", 1)
    base = int(first[1:])
    return {f"R{base + k}" for k in range(n)}


def instructions(path):
    sass = subprocess.run([NVDISASM, "-c", path], capture_output=True, text=True, check=True).stdout
    out = []
    for line in sass.splitlines():
        m = re.match(r"\s*/\*[0-9a-f]+\*/\s+(.*?)\s*;", line)
        if m:
            out.append(m.group(1))
    return out


def reads(ins, regs):
    body = ins.split(None, 1)
    if len(body) < 2:
        return False
    ops = [o for o in re.split(r"[ ,\[\]]+", body[1]) if o]
    sources = ops if ins.startswith(("ST", "@")) else ops[1:]
    return any(o.split(".")[0] in regs for o in sources)


def main():
    for path in sys.argv[1:]:
        ins = instructions(path)
        loads = []
        for i, t in enumerate(ins):
            m = LOAD.match(t)
            narrow = re.search(r"\.(U8|S8|U16|S16)", m.group(2) or "") if m else True
            if m and (m.group(3) == ".128" or (WIDE and not narrow)):
                loads.append((i, registers(m.group(4), m.group(3))))
        waits = 0
        for k, (i, regs) in enumerate(loads[:-1]):
            first_use = next((j for j in range(i + 1, len(ins)) if reads(ins[j], regs)), None)
            if first_use is not None and first_use < loads[k + 1][0]:
                waits += 1
        name = os.path.basename(path).removesuffix(".cubin")
        print(f"{len(loads):3} loads {waits:3} read before the next  {len(ins):5} instructions  {name}")


if __name__ == "__main__":
    main()
