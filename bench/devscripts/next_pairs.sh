#!/usr/bin/env bash
# P1 (EXPERIMENTS.md), one device call (H200): two panels' row-split trailing updates in one
# pass (`trailing_pairs`) against one at a time on the split-panel cases (2x4096 first),
# path alone in a graph with accuracy; then its GPU test (marker `variant`).
# Usage there:  ADAPTQR_COMMIT=<sha> bash bench/devscripts/next_pairs.sh   (files under $OUT)
source "$(dirname "$0")/_preamble.sh"
for n in 4096 2048 1024; do
  mkdir -p "$OUT/n$n"
  OUT="$OUT/n$n" timeout 120 python3 bench/devscripts/hh_bench.py --sections split_panels --split-n $n --split-variants base,tpairs --budget 100
done
echo "== GPU test  (t=$(( $(date +%s) - T0 ))s)"
timeout 150 python3 -m pytest -q -m gpu tests/gpu/test_householder_gpu.py -k trailing_pairs -p no:cacheprovider -rfE > "$OUT/gpu_tests.txt" 2>&1
echo "exit $?"; tail -n 6 "$OUT/gpu_tests.txt"
echo "== done  (t=$(( $(date +%s) - T0 ))s)"
