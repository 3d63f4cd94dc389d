#!/usr/bin/env bash
# Session 9: (1) C7, the cholqr estimate against prescribed condition numbers; (2) G2, the
# two largest cases through a graph, with and without the FP16 route offered up to 4096;
# (3) C8, issue 9's adaptqr bench: householder against cholqr on the same run; (4) the
# cholqr GPU tests.
# Usage there:  ADAPTQR_COMMIT=<sha> bash bench/devscripts/next_s9e.sh
source "$(dirname "$0")/_preamble.sh"
mkdir -p "$OUT/g2" "$OUT/c8"
echo "== 1. calibration (conditions)"
CALIB_DENSE=0 timeout 120 python3 bench/devscripts/cholqr_calib.py
echo "== 2. graphs / FP16 at n >= 2048  (t=$(( $(date +%s) - T0 ))s)"
timeout 200 python3 -m adaptqr bench --budget 0.8 --cases bench/devscripts/cases_big.json \
  --env graph:ADAPTQR_GRAPH_MAX_INPUT=268435456 \
  --env graph_f16:ADAPTQR_GRAPH_MAX_INPUT=268435456,ADAPTQR_FP16_MAX_N=4096 \
  --env f16:ADAPTQR_FP16_MAX_N=4096 --out "$OUT/g2"
echo "== 3. cholqr against householder  (t=$(( $(date +%s) - T0 ))s)"
ADAPTQR_CHOLQR=1 timeout 150 python3 -m adaptqr bench --budget 0.8 \
  --cases bench/devscripts/cases_big.json --paths householder,cholqr --out "$OUT/c8"
rm -f "$OUT"/g2/*.csv "$OUT"/g2/*.png "$OUT"/c8/*.csv "$OUT"/c8/*.png
echo "== 4. cholqr GPU tests  (t=$(( $(date +%s) - T0 ))s)"
timeout 120 python3 -m pytest -q tests/gpu/test_cholqr_gpu.py -p no:cacheprovider 2>&1 | tail -8
echo "== done  (t=$(( $(date +%s) - T0 ))s)"
