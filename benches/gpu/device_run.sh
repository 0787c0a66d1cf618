#!/bin/bash
# The GPU session's one prepared script (run on the device machine from the repo root, with
# the binaries built here in .device/: cuda_device, cuda-perf, cuda_latency): the device
# tests, cuda-perf (recording the GPU's baseline), PyTorch on the same cases, the per-call
# probes of both, and the comparison. Results go to $OUT (at most 8 files come back).
#   TEST_LIMIT / PERF_LIMIT / TORCH_LIMIT: seconds for each stage (tests 300: on a bare
#   machine NVRTC builds every kernel at its first launch; the whole binary took 177 s on an
#   H200 machine's 16 cores, 2026-11-28, the every-op checks building on 8 threads, two
#   tests at a time: the harness now runs up to 8 at once on a GPU);
#   TORCH_SIZES: MiB list;
#   TEST_SPLIT=1: the device tests as two processes at once; LAT_TORCH=0 skips PyTorch's
#   per-call probe, LAT=0 both; TESTS=0 skips the device tests, PERF=0 the full cuda-perf run.
#   AB_BASE=.device/<older cuda-perf> AB_FILTER=<keys> AB_SIZES=<MiB,...>: the older build and
#   this one, twice each (AB_ROUNDS), alternated, on the filtered cases and sizes (ab.log): a
#   paired before/after on one GPU. AB_BUILDS=".device/a .device/b ..." instead compares
#   those builds (variants of one change), each line of ab.log after its "== build" header. FULL=0 stops after it (no cuda-perf --record, PyTorch,
#   per-call probes); PERF_SIZES / TORCH_SIZES pick the full run's sizes, PERF_FILTER /
#   TORCH_FILTER its cases (comma-separated key substrings).
set -u
O=${OUT:-/tmp/out}
mkdir -p "$O"
B=.device
export TENSOR_OPS_NVRTC_DIR=${TENSOR_OPS_NVRTC_DIR:-/usr/local/cuda/lib64}
export PYTHONUNBUFFERED=1
[ "${TESTS:-1}" != 0 ] && {
  nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv
  ls "$TENSOR_OPS_NVRTC_DIR"/libnvrtc.so* 2>&1 | head -2
  echo "== device tests"
  if [ "${TEST_SPLIT:-0}" = 1 ]; then
    # two processes (the harness runs two threads each): the two tests that build every
    # op's kernels, and the rest
    L=${TEST_LIMIT:-300}
    (timeout "$L" $B/cuda_device ops_match_the_cpu_for_every reductions_match_the_cpu_for_every > /tmp/tests_a.log 2>&1; echo "tests (a) rc $?" >> /tmp/tests_a.log) &
    (timeout "$L" $B/cuda_device init_finds threads_building round_trips empty_tensors non_finite fused_softmax \
      dense_maps maps_with narrow_transposed small_extent one_long_row arg_reductions fused_chains f8_casts quantized_tensors sparse \
      batched_csr allocator \
      > /tmp/tests_b.log 2>&1; echo "tests (b) rc $?" >> /tmp/tests_b.log) &
    time wait
    cat /tmp/tests_a.log /tmp/tests_b.log
  else
    time timeout "${TEST_LIMIT:-300}" $B/cuda_device 2>&1
    echo "tests rc $?"
  fi
} > "$O/tests.log" 2>&1
grep -E "^test result|FAILED|panicked|rc [0-9]|real" "$O/tests.log" | head -20
AB_LIST=()
if [ -n "${AB_BUILDS:-}" ]; then
  read -r -a AB_LIST <<< "$AB_BUILDS"
elif [ -n "${AB_BASE:-}" ] && [ -x "$AB_BASE" ]; then
  AB_LIST=("$AB_BASE" "$B/cuda-perf")
fi
if [ ${#AB_LIST[@]} -gt 0 ]; then
  AB_SIZE_ARGS=()
  [ -n "${AB_SIZES:-}" ] && AB_SIZE_ARGS=(--sizes "$AB_SIZES")
  for round in $(seq 1 "${AB_ROUNDS:-2}"); do
    for bin in "${AB_LIST[@]}"; do
      echo "== $bin (round $round)"
      timeout "${AB_LIMIT:-90}" "$bin" --filter "${AB_FILTER:-add}" "${AB_SIZE_ARGS[@]}" --out /tmp/ab --baseline-dir /tmp/ab-none 2>&1 | grep "GB/s"
    done
  done > "$O/ab.log" 2>&1
  echo "A/B: $(grep -c GB/s "$O/ab.log") lines"
fi
[ "${FULL:-1}" = 0 ] && exit 0
PERF_SIZE_ARGS=()
[ -n "${PERF_SIZES:-}" ] && PERF_SIZE_ARGS=(--sizes "$PERF_SIZES")
[ -n "${PERF_FILTER:-}" ] && PERF_SIZE_ARGS+=(--filter "$PERF_FILTER")
# a partial run is not recorded as the GPU's baseline
REC=(--record)
[ ${#PERF_SIZE_ARGS[@]} -gt 0 ] && REC=()
if [ "${PERF:-1}" != 0 ]; then
  {
    time timeout "${PERF_LIMIT:-200}" $B/cuda-perf "${REC[@]}" "${PERF_SIZE_ARGS[@]}" --out /tmp/perf --baseline-dir benches/baselines/cuda 2>&1
    echo "cuda-perf rc $?"
  } > "$O/cuda_perf.log" 2>&1
  tail -3 "$O/cuda_perf.log"
  cp benches/baselines/cuda/*.json "$O/" 2>/dev/null
fi
{
  time FILTER="${TORCH_FILTER:-}" timeout "${TORCH_LIMIT:-240}" python3 benches/gpu/torch_peers.py ${TORCH_SIZES:-16 64 256 1024} 2>&1
  echo "torch rc $?"
} > "$O/torch.log" 2>&1
tail -3 "$O/torch.log"
if [ "${LAT:-1}" != 0 ]; then
  {
    echo "== tensor-ops"; timeout 60 $B/cuda_latency 20000 2>&1
    if [ "${LAT_TORCH:-1}" != 0 ]; then echo "== torch"; timeout 90 python3 benches/gpu/latency.py cuda 20000 2>&1; fi
  } > "$O/latency.log" 2>&1
  cat "$O/latency.log"
fi
python3 benches/gpu/compare.py "$O/cuda_perf.log" "$O/torch.log" > "$O/compare.md" 2>&1
sed -n '/cases at or above/,$p' "$O/compare.md"
