#!/usr/bin/env bash
# EXPERIMENTS.md G6: inputs above ADAPTQR_GRAPH_MAX_INPUT (eager) whose GPU work is shorter
# than the host's enqueue. Host time of one eager call (host_time.py, cProfile) at 320x512
# and 640x512; then the bench, eager / through a graph / look-ahead off, side by side.
source "$(dirname "$0")/_preamble.sh"
for s in 320x512 640x512; do
  timeout 120 python3 bench/devscripts/host_time.py --shape $s --fp16 1 > "$OUT/host_$s.txt" 2>&1
  echo "host $s: exit $? (t=$(( $(date +%s) - T0 ))s)"; head -30 "$OUT/host_$s.txt"
done
timeout 400 python3 -m adaptqr bench --cases bench/devscripts/cases_g6.json --no-baseline \
  --budget "${BUDGET:-1.5}" --env g:ADAPTQR_GRAPH_MAX_INPUT=4294967296 --knobs la0:lookahead=0 \
  --out "$OUT/bench" > "$OUT/bench.txt" 2>&1
echo "bench: exit $? (t=$(( $(date +%s) - T0 ))s)"; grep -E "^[0-9].*adaptqr|geomean" "$OUT/bench.txt"
