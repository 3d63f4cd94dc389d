#!/usr/bin/env bash
# EXPERIMENTS.md N25 (knob pair_split): the FP16 pair rest update as a Y launch and an
# update launch over row slices. Steps (each skipped if its variable is set):
#   tests (SKIP_TESTS): its GPU test (against the pair kernel), ~60 s
#   bench (SKIP_BENCH): cases_n25.json, default / off side by side, ~60 s
#   trace (TRACE=1): eager traces of 640x512, default and off, ~60 s
source "$(dirname "$0")/_preamble.sh"
if [ -z "${SKIP_TESTS:-}" ]; then
  timeout 200 python3 -m pytest -q -p no:cacheprovider -rfE \
    tests/gpu/test_fp16_route_gpu.py::test_pair_split_matches > "$OUT/tests.txt" 2>&1
  echo "tests: exit $? (t=$(( $(date +%s) - T0 ))s)"; tail -5 "$OUT/tests.txt"
fi
if [ -z "${SKIP_BENCH:-}" ]; then
  timeout 300 python3 -m adaptqr bench --cases bench/devscripts/cases_n25.json --no-baseline \
    ${N25_KNOBS:---knobs off:pair_split=0} \
    --out "$OUT/bench" > "$OUT/bench.txt" 2>&1
  echo "bench: exit $? (t=$(( $(date +%s) - T0 ))s)"; grep -E "^[0-9].*adaptqr|geomean" "$OUT/bench.txt"
fi
if [ -n "${TRACE:-}" ]; then
  timeout 120 python3 bench/devscripts/trace.py --shapes 640x512 --cond 2 --case dense \
    --seed 1029 --no-path --knobs off:pair_split=0 > "$OUT/trace.txt" 2>&1
  echo "trace: exit $? (t=$(( $(date +%s) - T0 ))s)"; grep -E "span|trailing|pair" "$OUT/trace.txt"
fi
