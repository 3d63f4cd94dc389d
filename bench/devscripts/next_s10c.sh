#!/usr/bin/env bash
# Session 10, third call (H200):
#   1. C13: `adaptqr bench --paths householder,cholqr` on issue 9's two cases (JSON kept);
#   2. the cholqr, graph and contract GPU tests (GraphCache gained output_slots);
#   3. cholqr_sweep.py: 4x4096 and 1x8192, direct calls.
# Usage there:  ADAPTQR_COMMIT=<sha> bash bench/devscripts/next_s10c.sh
source "$(dirname "$0")/_preamble.sh"
echo "== 1. bench"
ADAPTQR_CHOLQR=1 timeout 280 python3 -m adaptqr bench --cases bench/devscripts/cases_cholqr_issue9.json \
  --paths householder,cholqr --no-baseline --out "$OUT/c13" 2>&1 | tail -12
echo "== 2. tests  (t=$(( $(date +%s) - T0 ))s)"
timeout 200 python3 -m pytest -q tests/gpu/test_cholqr_gpu.py tests/gpu/test_graphs_gpu.py \
  tests/gpu/test_contract_gpu.py -m "gpu and not variant" -p no:cacheprovider -rfE 2>&1 | tail -6
echo "== 3. sweep  (t=$(( $(date +%s) - T0 ))s)"
timeout 240 python3 bench/devscripts/cholqr_sweep.py
echo "== done  (t=$(( $(date +%s) - T0 ))s)"
