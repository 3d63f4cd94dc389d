#!/usr/bin/env bash
# CholeskyQR2 row-split panels (EXPERIMENTS.md C2), one device call (H200): the variants on
# the split-panel cases with accuracy and the n >= 1024 test cases (hh_bench cholqr), the
# public bench on the 12 cases, then the Householder GPU tests.
# Usage there:  ADAPTQR_COMMIT=<sha> bash bench/devscripts/cholqr.sh   (files under $OUT)
source "$(dirname "$0")/_preamble.sh"
mkdir -p "$OUT/a" "$OUT/main"
OUT="$OUT/a" timeout 200 python3 bench/devscripts/hh_bench.py --sections cholqr --budget 150
echo "== bench  (t=$(( $(date +%s) - T0 ))s)"
timeout 150 python3 -m adaptqr bench --budget 1.5 --out "$OUT/main" | tail -n 20
rm -f "$OUT"/*/*.csv "$OUT"/*/*.png
echo "== GPU tests  (t=$(( $(date +%s) - T0 ))s)"
timeout 170 python3 -m pytest -q -m gpu tests/gpu/test_householder_gpu.py -p no:cacheprovider -rfE > "$OUT/gpu_tests.txt" 2>&1
echo "exit $?"; tail -n 15 "$OUT/gpu_tests.txt"
echo "== done  (t=$(( $(date +%s) - T0 ))s)"
