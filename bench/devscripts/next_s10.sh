#!/usr/bin/env bash
# Session 10 (H200):
#   1. the cholqr GPU tests (the LU leaf that reuses _lu_signs, rsqrt in the Cholesky leaf,
#      the body through its graph and stream lanes);
#   2. C12: the lanes against householder, and cuBLAS's batched TRSM (cholqr_lanes.py);
#   3. the schedule-variant GPU tests (-m variant), not run since session 7.
# Usage there:  ADAPTQR_COMMIT=<sha> bash bench/devscripts/next_s10.sh
source "$(dirname "$0")/_preamble.sh"
echo "== 1. cholqr tests"
timeout 150 python3 -m pytest -q tests/gpu/test_cholqr_gpu.py -p no:cacheprovider -rfE 2>&1 | tail -8
echo "== 2. lanes  (t=$(( $(date +%s) - T0 ))s)"
timeout 240 python3 bench/devscripts/cholqr_lanes.py | cut -c1-600
echo "== 3. variant GPU tests  (t=$(( $(date +%s) - T0 ))s)"
timeout 150 python3 -m pytest -q -m "gpu and variant" tests/gpu -p no:cacheprovider -rfE \
  > "$OUT/gpu_variant.txt" 2>&1
echo "variant tests exit $?"; tail -n 6 "$OUT/gpu_variant.txt"
echo "== done  (t=$(( $(date +%s) - T0 ))s)"
