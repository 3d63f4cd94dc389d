#!/usr/bin/env bash
# Session 4's first device call (H200): next_split.sh's panel comparison (S3 pairs, C2 at 4
# warps; path alone in a graph, with accuracy) and next_tail.sh's low-rank bench (Z1 default,
# T1 TF32 tail, no detection), then the pairs GPU tests. Each step has its own timeout.
# Usage there:  ADAPTQR_COMMIT=<sha> bash bench/devscripts/next_s4.sh   (files under $OUT)
source "$(dirname "$0")/_preamble.sh"
mkdir -p "$OUT/a" "$OUT/main"
OUT="$OUT/a" timeout 230 python3 bench/devscripts/hh_bench.py --sections split_panels --budget 190
echo "== low-rank bench  (t=$(( $(date +%s) - T0 ))s)"
timeout 200 python3 -m adaptqr bench --budget 1.5 --cases bench/devscripts/cases_lowrank.json --env tailtf32:ADAPTQR_TAIL_PREC=tf32 --env nodetect:ADAPTQR_DETECT=0 --no-baseline --out "$OUT/main" | grep -v "^  "
rm -f "$OUT"/*/*.csv "$OUT"/*/*.png
echo "== pairs GPU tests  (t=$(( $(date +%s) - T0 ))s)"
timeout 90 python3 -m pytest -q -m gpu tests/gpu/test_householder_gpu.py -k "pair" -p no:cacheprovider -rfE > "$OUT/gpu_tests.txt" 2>&1
echo "exit $?"; tail -n 8 "$OUT/gpu_tests.txt"
echo "== done  (t=$(( $(date +%s) - T0 ))s)"
