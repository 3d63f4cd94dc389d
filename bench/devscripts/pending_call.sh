#!/usr/bin/env bash
# The device work left after session 55 (EXPERIMENTS.md V20, OC46), as one call in priority
# order. A step starts only if its timeout still fits in BUDGET seconds (default 540)
# counted from the call's start, so a short call (a session low on device time) runs the
# first steps whole instead of cutting one off:
#   1. N31's GPU test with the tiles stopped at n_nonzero (1536 and 2048 failed in run 0717)
#   2. N31's cases beside the default                                  -> n31/*.json
#   3. the GPU tests of the changed trailing kernels (FP16 route, degenerate input)
#   4. the 12 cases with the torch baseline (main's figures)            -> b12/*.json
# Every step's output is in log.txt. The benches' CSVs are removed at the end: the device
# tool brings back at most eight files. (Sessions 52-54's version, which ran in session 55,
# is in git at 6e882aa.)
# Run there: BUDGET=300 bash bench/devscripts/pending_call.sh
source "$(dirname "$0")/_preamble.sh"
BUDGET=${BUDGET:-540}
nvidia-smi --query-gpu=name --format=csv,noheader
# step NAME TIMEOUT CMD...: runs CMD under TIMEOUT seconds if that fits in what BUDGET leaves.
step() {
  local name=$1 limit=$2 used
  shift 2
  used=$(( $(date +%s) - T0 ))
  if (( used + limit > BUDGET )); then
    echo "== $name: not run ($used s used of $BUDGET, needs $limit)"
    return
  fi
  echo "== $name (t=${used}s)"
  timeout "$limit" "$@"
  echo "== $name: exit $?"
}
step n31_tests 150 python3 -m pytest -q -m gpu tests/gpu/test_fp16_route_gpu.py -k exactly_zero_suffix
step n31 140 python3 -m adaptqr bench --budget 0.4 --no-baseline --out "$OUT/n31" \
  --cases bench/devscripts/cases_n31.json --knobs new:fp16_compose=1
step gpu_tests 240 python3 -m pytest -q -m "gpu and not variant" -p no:cacheprovider -rfE \
  tests/gpu/test_fp16_route_gpu.py tests/gpu/test_degenerate_gpu.py
step b12 190 python3 -m adaptqr bench --budget 0.4 --out "$OUT/b12"
rm -f "$OUT"/*/*.csv "$OUT"/*/*.png
echo "elapsed $(( $(date +%s) - T0 )) s"
