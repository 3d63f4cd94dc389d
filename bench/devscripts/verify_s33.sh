#!/usr/bin/env bash
# Session 33's check of main after N23/N24/N25 (one call, ~400 s): the FP16 route's GPU file
# (variants included: N25's), the degenerate-input suite (part c), the benchmark cases at
# their other seeds (cases_other_seeds.json, cases_seeds5_rest.json), and the new split
# pair update on shapes not measured before (cases_n25_unseen.json).
source "$(dirname "$0")/_preamble.sh"
timeout 200 python3 -m pytest -q -m gpu tests/gpu/test_fp16_route_gpu.py -p no:cacheprovider -rfE \
  > "$OUT/gpu_fp16_route.txt" 2>&1
echo "fp16 route file: exit $? (t=$(( $(date +%s) - T0 ))s)"; tail -n 3 "$OUT/gpu_fp16_route.txt"
GPU_TESTS_TIMEOUT=120 bash "$(dirname "$0")/gpu_tests.sh" c | grep -E "exit|passed|failed"
for c in other_seeds seeds5_rest n25_unseen; do
  timeout 90 python3 -m adaptqr check --cases "bench/devscripts/cases_$c.json" \
    > "$OUT/check_$c.txt" 2>/dev/null
  echo "check $c: exit $? (t=$(( $(date +%s) - T0 ))s)"; tail -n 1 "$OUT/check_$c.txt"
done
