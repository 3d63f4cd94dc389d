#!/usr/bin/env bash
# Session 32 (EXPERIMENTS.md N22): an update's FP16-route launch first. Variant test, then
# the cases of cases_n22.json side by side.
source "$(dirname "$0")/_preamble.sh"
timeout 200 python3 -m pytest -q -p no:cacheprovider -m "gpu and variant" -k "f16_first" \
  tests/gpu/test_fp16_route_gpu.py > "$OUT/variant_tests.txt" 2>&1
echo "tests: exit $? (t=$(( $(date +%s) - T0 ))s)"; tail -3 "$OUT/variant_tests.txt"
timeout 300 python3 -m adaptqr bench --cases bench/devscripts/cases_n22.json --no-baseline \
  --knobs f1:f16_first=1 --out "$OUT/bench" > "$OUT/bench.txt" 2>&1
echo "bench: exit $? (t=$(( $(date +%s) - T0 ))s)"; grep -E "^[0-9].*adaptqr|geomean" "$OUT/bench.txt"
