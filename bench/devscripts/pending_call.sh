#!/usr/bin/env bash
# The device work that sessions 52-54 built and could not run (EXPERIMENTS.md V18, V19), as
# one call in priority order. A step starts only if its timeout still fits in BUDGET seconds
# (default 540) counted from the call's start, so a short call (a session low on device
# time) runs the first steps whole instead of cutting one off:
#   1. N31's GPU test (routes composed, knob fp16_compose)
#   2. N31's cases beside the default                                 -> n31/*.json
#   3. H46: the Gram panel's phase marks at 40x176, 40x352, 60x1024   -> gram_phases.json
#   4. the 12 cases with the torch baseline (main's figures, H45 on)  -> b12/*.json
#   5. H47: the cluster_small_rows knob beside cluster_small_batch    -> h47/*.json
# Every step's output is in log.txt. The benches' CSVs are removed at the end: the device
# tool brings back at most eight files.
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
step n31_tests 100 python3 -m pytest -q -m gpu tests/gpu/test_fp16_route_gpu.py
step n31 140 python3 -m adaptqr bench --budget 0.4 --no-baseline --out "$OUT/n31" \
  --cases bench/devscripts/cases_n31.json --knobs new:fp16_compose=1
(cd bench/devscripts && step h46 90 python3 gram_phases.py --shapes 40x176,40x352,60x1024 \
  --out "$OUT/gram_phases.json")
step b12 190 python3 -m adaptqr bench --budget 0.4 --out "$OUT/b12"
step h47 150 python3 -m adaptqr bench --budget 0.4 --no-baseline --out "$OUT/h47" \
  --cases bench/devscripts/cases_s51_clusters.json --knobs c64:cluster_small_batch=64 \
  --knobs c64r128:cluster_small_batch=64,cluster_small_rows=128
rm -f "$OUT"/*/*.csv "$OUT"/*/*.png
echo "elapsed $(( $(date +%s) - T0 )) s"
