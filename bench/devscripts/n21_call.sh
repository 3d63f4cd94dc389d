#!/usr/bin/env bash
# Session 32 (EXPERIMENTS.md N21): the FP16-only update's fitted tile. Variant test, the
# FP16-routed cases side by side, and an eager trace of 640x512 with and without it.
source "$(dirname "$0")/_preamble.sh"
timeout 200 python3 -m pytest -q -p no:cacheprovider -m "gpu and variant" -k "fp16_fit" \
  tests/gpu/test_fp16_route_gpu.py > "$OUT/variant_tests.txt" 2>&1
echo "tests: exit $? (t=$(( $(date +%s) - T0 ))s)"; tail -3 "$OUT/variant_tests.txt"
timeout 240 python3 -m adaptqr bench --cases bench/devscripts/cases_w7.json --no-baseline \
  --knobs fit:fp16_fit=1 --knobs g1:fp16_group=1 --knobs g1fit:fp16_group=1,fp16_fit=1 ${BENCH_EXTRA:-} --out "$OUT/bench" > "$OUT/bench.txt" 2>&1
echo "bench: exit $? (t=$(( $(date +%s) - T0 ))s)"; tail -25 "$OUT/bench.txt"
timeout 150 python3 bench/devscripts/trace.py --shapes 640x512 --cond 2 \
  --knobs fit:fp16_fit=1 > "$OUT/trace.txt" 2>&1
echo "trace: exit $? (t=$(( $(date +%s) - T0 ))s)"; grep -E "span|x  " "$OUT/trace.txt" | head -40
