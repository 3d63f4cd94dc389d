#!/usr/bin/env bash
# Row-split panels (EXPERIMENTS.md S3, C2), one device call (H200): the split-panel cases
# (60x1024, 8x2048, 2x4096, 3x1100) with one column a barrier, two (split_pairs) and the
# CholeskyQR2 panel at 8 and 4 warps, path alone in a graph with accuracy; then the
# Householder GPU tests (pairs and CholeskyQR2 tests among them).
# (Run 1250 was this script's first form, `cholqr.sh`, with the CholeskyQR2 panel as default.)
# Usage there:  ADAPTQR_COMMIT=<sha> bash bench/devscripts/next_split.sh   (files under $OUT)
source "$(dirname "$0")/_preamble.sh"
mkdir -p "$OUT/a"
OUT="$OUT/a" timeout 300 python3 bench/devscripts/hh_bench.py --sections split_panels --budget 260
echo "== GPU tests  (t=$(( $(date +%s) - T0 ))s)"
timeout 200 python3 -m pytest -q -m gpu tests/gpu/test_householder_gpu.py -p no:cacheprovider -rfE --durations=6 > "$OUT/gpu_tests.txt" 2>&1
echo "exit $?"; tail -n 12 "$OUT/gpu_tests.txt"
echo "== done  (t=$(( $(date +%s) - T0 ))s)"
