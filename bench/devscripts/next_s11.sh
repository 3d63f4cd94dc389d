#!/usr/bin/env bash
# Prepared in session 10 for the next (H200): H11, the row-split workspace fix (4fd06b5).
#   1. 4x4096 direct, three calls, with a stack dump after 100 s (hang_4x4096.py);
#   2. `adaptqr bench` (checks, then times; no torch baseline) on four shapes whose row-split
#      program count grows along the factorization (cases_split_growth.json);
#   3. the householder and contract GPU tests.
# Usage there:  ADAPTQR_COMMIT=<sha> bash bench/devscripts/next_s11.sh
source "$(dirname "$0")/_preamble.sh"
echo "== 1. 4x4096 direct"
timeout 150 python3 bench/devscripts/hang_4x4096.py 4 4096 2>&1 | tail -12
echo "== 2. bench  (t=$(( $(date +%s) - T0 ))s)"
timeout 300 python3 -m adaptqr bench --cases bench/devscripts/cases_split_growth.json \
  --no-baseline --out "$OUT/h11" 2>&1 | tail -12
echo "== 3. tests  (t=$(( $(date +%s) - T0 ))s)"
timeout 120 python3 -m pytest -q tests/gpu/test_householder_gpu.py tests/gpu/test_contract_gpu.py \
  -m "gpu and not variant" -p no:cacheprovider -rfE 2>&1 | tail -4
echo "== done  (t=$(( $(date +%s) - T0 ))s)"
