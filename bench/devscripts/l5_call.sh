#!/usr/bin/env bash
# EXPERIMENTS.md L5: look-ahead on / off side by side where the batch fills the GPU, and
# where it does not (bench/devscripts/cases_l5.json), ~150 s.
source "$(dirname "$0")/_preamble.sh"
timeout 400 python3 -m adaptqr bench --cases bench/devscripts/cases_l5.json --no-baseline \
  --budget "${BUDGET:-1.5}" --knobs la0:lookahead=0 ${EXTRA:-} --out "$OUT/bench" > "$OUT/bench.txt" 2>&1
echo "bench: exit $? (t=$(( $(date +%s) - T0 ))s)"; grep -E "^[0-9].*adaptqr|geomean" "$OUT/bench.txt"
