#!/usr/bin/env bash
# Session 10, second call (H200): the cholqr GPU tests with the body graph (no lanes), then
# C13: `adaptqr bench --paths householder,cholqr` on the two issue-9 cases and two larger
# sizes (where, if anywhere, the path starts to pay).
# Usage there:  ADAPTQR_COMMIT=<sha> bash bench/devscripts/next_s10b.sh
source "$(dirname "$0")/_preamble.sh"
echo "== 1. cholqr tests"
timeout 150 python3 -m pytest -q tests/gpu/test_cholqr_gpu.py -p no:cacheprovider -rfE 2>&1 | tail -8
echo "== 2. bench  (t=$(( $(date +%s) - T0 ))s)"
ADAPTQR_CHOLQR=1 timeout 400 python3 -m adaptqr bench --cases bench/devscripts/cases_cholqr_sizes.json \
  --paths householder,cholqr --no-baseline --out "$OUT/c13" 2>&1 | tail -25
echo "== done  (t=$(( $(date +%s) - T0 ))s)"
