#!/usr/bin/env bash
# Session 34's first diagnosis (EXPERIMENTS.md N26b, OC26): the deterministic mode with and
# without N26's partials; 640x512's kernel timeline with the look-ahead on and off (off:
# every kernel alone, so its time is its own); ncu of the first trailing launches there.
# Steps skipped if their variable is set: SKIP_DET, SKIP_TRACE, SKIP_NCU.
source "$(dirname "$0")/_preamble.sh"
if [ -z "${SKIP_DET:-}" ]; then
  timeout 200 python3 bench/devscripts/det_diag.py > "$OUT/det.txt" 2>&1
  echo "det: exit $? (t=$(( $(date +%s) - T0 ))s)"; cat "$OUT/det.txt" | grep -v Warning
fi
if [ -z "${SKIP_TRACE:-}" ]; then
  timeout 150 python3 bench/devscripts/trace.py --shapes 640x512 --cond 2 --no-path \
    --knobs la0:lookahead=0 > "$OUT/trace.txt" 2>&1
  echo "trace: exit $? (t=$(( $(date +%s) - T0 ))s)"; grep -v "slice\|Warning\|warn" "$OUT/trace.txt"
  cp "$OUT/trace.json" "$OUT/trace_640.json" 2>/dev/null
fi
if [ -z "${SKIP_NCU:-}" ]; then
  ONE_CALL_KNOBS=lookahead=0 NCU_SHAPES=640x512 NCU_COUNT=${NCU_COUNT:-6} NCU_TIMEOUT=200 \
    bash "$(dirname "$0")/ncu_kernels.sh"
fi
