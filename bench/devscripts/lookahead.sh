#!/usr/bin/env bash
# Look-ahead (EXPERIMENTS.md L1) through the public call and path alone, one device call
# (H200): adaptqr bench on the three row-split cases with ADAPTQR_LOOKAHEAD=1 against the
# default (off); hh_bench cholqr (base / lookahead / CholeskyQR2 at 4 warps, in a graph);
# the Householder and graph GPU tests.
# Usage there:  ADAPTQR_COMMIT=<sha> bash bench/devscripts/lookahead.sh   (files under $OUT)
source "$(dirname "$0")/_preamble.sh"
mkdir -p "$OUT/a" "$OUT/main"
timeout 110 python3 -m adaptqr bench --budget 1.5 --cases bench/devscripts/cases_split.json --env lookahead:ADAPTQR_LOOKAHEAD=1 --out "$OUT/main" | grep -v "^  "
rm -f "$OUT"/*/*.csv "$OUT"/*/*.png
echo "== variants  (t=$(( $(date +%s) - T0 ))s)"
OUT="$OUT/a" timeout 100 python3 bench/devscripts/hh_bench.py --sections cholqr --budget 70
echo "== GPU tests  (t=$(( $(date +%s) - T0 ))s)"
timeout 170 python3 -m pytest -q -m gpu tests/gpu/test_householder_gpu.py tests/gpu/test_graphs_gpu.py -p no:cacheprovider -rfE --durations=6 > "$OUT/gpu_tests.txt" 2>&1
echo "exit $?"; tail -n 16 "$OUT/gpu_tests.txt"
echo "== done  (t=$(( $(date +%s) - T0 ))s)"
