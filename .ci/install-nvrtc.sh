#!/usr/bin/env bash
# Installs NVIDIA's CUDA 13 NVRTC (plus the fp16/bf16 headers it needs) from PyPI wheels into
# <repo>/.nvrtc, so that CUDA kernels can be compiled and checked on a machine without a GPU
# or CUDA toolkit. Idempotent: does nothing when the pinned versions are already there.
#
# Usage: .ci/install-nvrtc.sh [TARGET_DIR]     (default: <repo>/.nvrtc)
# Afterwards the library lives in TARGET/nvidia/cu13/lib and the headers in
# TARGET/nvidia/cu13/include (+ include/cccl); tensor-kernels-cuda finds <repo>/.nvrtc by itself,
# or set TENSOR_OPS_NVRTC_DIR=TARGET/nvidia/cu13/lib.
set -euo pipefail

repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
target="${1:-$repo/.nvrtc}"
pins=(
  nvidia-cuda-nvrtc==13.4.92
  nvidia-cuda-runtime==13.4.92
  nvidia-cuda-crt==13.4.92
  nvidia-cuda-cccl==13.2.86
)
stamp="$target/.installed"
want="${pins[*]}"

lib="$target/nvidia/cu13/lib"
if [[ -f "$stamp" && "$(cat "$stamp")" == "$want" ]] && ls "$lib"/libnvrtc.so* >/dev/null 2>&1; then
  echo "NVRTC already installed: $lib"
else
  pip="$(command -v pip3 || command -v pip || true)"
  if [[ -z "$pip" ]]; then
    echo "install-nvrtc: pip is not available; install Python 3 with pip first" >&2
    exit 1
  fi
  rm -rf "$target"
  mkdir -p "$target"
  "$pip" install --quiet --disable-pip-version-check --no-cache-dir --no-deps --target "$target" "${pins[@]}"
  echo "$want" >"$stamp"
  # The tests' build scripts watch this script: touching it makes them look again and stop
  # reporting the CUDA checks as ignored.
  touch "${BASH_SOURCE[0]}"
  echo "NVRTC installed: $lib"
fi
echo "  library: $(ls "$lib"/libnvrtc.so* | head -n 1)"
echo "  headers: $target/nvidia/cu13/include $target/nvidia/cu13/include/cccl"
