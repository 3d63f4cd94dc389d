#!/usr/bin/env bash
# The calls sessions 51-52 left (EXPERIMENTS.md OC42, OC43), in two device calls of under
# 600 s each:
#   PART=1: H46 (where a Gram panel's time goes: gram_phases.py), H47 (small batches' Gram
#           panels in clusters from 129 rows) beside the default, N31's GPU tests (the FP16
#           route's file, routes composed with the knob fp16_compose=1).
#   PART=2: N31's cases beside the default (--knobs new:fp16_compose=1), then the 12 cases.
# Run there: PART=1 bash bench/devscripts/next_call.sh (then PART=2 on the warm machine).
source "$(dirname "$0")/_preamble.sh"
if [ "${PART:-1}" = 1 ]; then
  (cd bench/devscripts && timeout 150 python3 gram_phases.py --shapes 40x176,40x352,60x1024 \
    --out "$OUT/gram_phases.json") > "$OUT/gram_phases.txt" 2>&1
  echo "gram_phases: exit $? (t=$(( $(date +%s) - T0 ))s)"; cat "$OUT/gram_phases.txt" | tail -60
  timeout 150 python3 -m adaptqr bench --budget 0.4 --no-baseline --out "$OUT/h47" \
    --cases bench/devscripts/cases_s51_clusters.json --knobs c64:cluster_small_batch=64 \
    --knobs c64r128:cluster_small_batch=64,cluster_small_rows=128 > "$OUT/h47.txt" 2>&1
  echo "h47: exit $? (t=$(( $(date +%s) - T0 ))s)"; tail -25 "$OUT/h47.txt"
  timeout 200 python3 -m pytest -q -m gpu tests/gpu/test_fp16_route_gpu.py > "$OUT/n31_tests.txt" 2>&1
  echo "n31 tests: exit $? (t=$(( $(date +%s) - T0 ))s)"; tail -15 "$OUT/n31_tests.txt"
else
  timeout 200 python3 -m adaptqr bench --budget 0.4 --no-baseline --out "$OUT/n31" \
    --cases bench/devscripts/cases_n31.json --knobs new:fp16_compose=1 > "$OUT/n31.txt" 2>&1
  echo "n31 bench: exit $? (t=$(( $(date +%s) - T0 ))s)"; tail -30 "$OUT/n31.txt"
  timeout 330 python3 -m adaptqr bench --budget 0.4 --out "$OUT/b12" > "$OUT/b12.txt" 2>&1
  echo "b12: exit $? (t=$(( $(date +%s) - T0 ))s)"; tail -25 "$OUT/b12.txt"
fi
