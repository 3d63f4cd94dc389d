#!/usr/bin/env bash
# EXPERIMENTS.md H28 and N23 (built in session 32, not run): the update between a group's
# two panels inside the second CUDA C panel (knob panel_pro); the rest updates' reflectors
# from a float16 copy (knob fp16_v16; N24 for the row-split ones). Steps (each skipped if its variable is set):
#   tests  (SKIP_TESTS): their GPU tests and L4's deterministic-mode test, ~150 s
#   bench  (SKIP_BENCH): cases_s32_next.json, default / pro / v16 / both side by side, ~330 s
#   trace  (only with TRACE=1): eager traces of 640x512 with each knob, ~80 s
# First call: `bash bench/devscripts/s32_next_call.sh`; then, if it helps to see why:
# `SKIP_TESTS=1 SKIP_BENCH=1 TRACE=1 bash bench/devscripts/s32_next_call.sh`.
source "$(dirname "$0")/_preamble.sh"
if [ -z "${SKIP_TESTS:-}" ]; then
  timeout 180 python3 -m pytest -q -p no:cacheprovider \
    tests/gpu/test_fp16_route_gpu.py::test_panel_pro_matches \
    tests/gpu/test_fp16_route_gpu.py::test_fp16_v16_gives_the_same_bits \
    tests/gpu/test_fp16_route_gpu.py::test_fp16_v16_row_split \
    tests/gpu/test_householder_gpu.py::test_deterministic_mode_gives_the_same_bits \
    > "$OUT/tests.txt" 2>&1
  echo "tests: exit $? (t=$(( $(date +%s) - T0 ))s)"; tail -5 "$OUT/tests.txt"
fi
if [ -z "${SKIP_BENCH:-}" ]; then
  timeout 330 python3 -m adaptqr bench --cases bench/devscripts/cases_s32_next.json --no-baseline \
    --knobs pro:panel_pro=1 --knobs v16:fp16_v16=1 --knobs both:panel_pro=1,fp16_v16=1 \
    --out "$OUT/bench" > "$OUT/bench.txt" 2>&1
  echo "bench: exit $? (t=$(( $(date +%s) - T0 ))s)"; grep -E "^[0-9].*adaptqr|geomean" "$OUT/bench.txt"
fi
if [ -n "${TRACE:-}" ]; then
  timeout 120 python3 bench/devscripts/trace.py --shapes 640x512 --cond 2 --case dense \
    --seed 1029 --no-path --knobs pro:panel_pro=1 --knobs v16:fp16_v16=1 > "$OUT/trace.txt" 2>&1
  echo "trace: exit $? (t=$(( $(date +%s) - T0 ))s)"; grep -E "span" "$OUT/trace.txt"
fi
