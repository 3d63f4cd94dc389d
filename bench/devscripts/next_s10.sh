#!/usr/bin/env bash
# Prepared in session 9 for the next (H200):
#   1. the cholqr GPU tests at the LU leaf that reuses _lu_signs (interpreter-tested and
#      compiled offline only in session 9), and the path alone with its parts (C6/C9 form);
#   2. the schedule-variant GPU tests (-m variant), not run since session 7.
# Usage there:  ADAPTQR_COMMIT=<sha> bash bench/devscripts/next_s10.sh
source "$(dirname "$0")/_preamble.sh"
echo "== 1. cholqr"
timeout 120 python3 -m pytest -q tests/gpu/test_cholqr_gpu.py -p no:cacheprovider 2>&1 | tail -4
timeout 240 python3 bench/devscripts/cholqr_time.py 8x2048 2x4096 | cut -c1-400
echo "== 2. variant GPU tests  (t=$(( $(date +%s) - T0 ))s)"
timeout 200 python3 -m pytest -q -m "gpu and variant" tests/gpu -p no:cacheprovider -rfE \
  > "$OUT/gpu_variant.txt" 2>&1
echo "variant tests exit $?"; tail -n 6 "$OUT/gpu_variant.txt"
echo "== done  (t=$(( $(date +%s) - T0 ))s)"
