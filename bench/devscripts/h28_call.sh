#!/usr/bin/env bash
# EXPERIMENTS.md H28 (built in session 32, not run): the update between a group's two
# panels inside the second CUDA C panel (knob panel_pro). Its tests (the GPU variant test,
# the deterministic-mode test of L4), then the FP16-routed cases and the big ones side by
# side, then an eager trace of 640x512 with and without it. ~400 s.
source "$(dirname "$0")/_preamble.sh"
timeout 220 python3 -m pytest -q -p no:cacheprovider \
  tests/gpu/test_fp16_route_gpu.py::test_panel_pro_matches \
  tests/gpu/test_householder_gpu.py::test_deterministic_mode_gives_the_same_bits \
  > "$OUT/tests.txt" 2>&1
echo "tests: exit $? (t=$(( $(date +%s) - T0 ))s)"; tail -5 "$OUT/tests.txt"
timeout 240 python3 -m adaptqr bench --cases bench/devscripts/cases_n22.json --no-baseline \
  --knobs pro:panel_pro=1 --out "$OUT/bench" > "$OUT/bench.txt" 2>&1
echo "bench: exit $? (t=$(( $(date +%s) - T0 ))s)"; grep -E "^[0-9].*adaptqr|geomean" "$OUT/bench.txt"
timeout 120 python3 bench/devscripts/trace.py --shapes 640x512 --cond 2 --case dense --seed 1029 \
  --no-path --knobs pro:panel_pro=1 > "$OUT/trace.txt" 2>&1
echo "trace: exit $? (t=$(( $(date +%s) - T0 ))s)"; grep -E "span" "$OUT/trace.txt"
