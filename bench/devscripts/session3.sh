#!/usr/bin/env bash
# Session 3's measuring call (H200): adaptqr bench on the 12 cases (default: look-ahead on
# for row-split panels), the look-ahead / CholeskyQR2 variants on the split-panel cases
# (hh_bench cholqr, with the n >= 1024 test cases checked), every GPU test, adaptqr check
# on the 22 test cases and the 12 benchmark cases at other seeds.
# Usage there:  ADAPTQR_COMMIT=<sha> bash bench/devscripts/session3.sh   (files under $OUT)
source "$(dirname "$0")/_preamble.sh"
mkdir -p "$OUT/a" "$OUT/main"
echo "== 1. bench"
timeout 170 python3 -m adaptqr bench --budget 1.2 --out "$OUT/main" | grep -v "^  "
rm -f "$OUT"/*/*.csv "$OUT"/*/*.png
echo "== 2. split-panel variants  (t=$(( $(date +%s) - T0 ))s)"
OUT="$OUT/a" timeout 110 python3 bench/devscripts/hh_bench.py --sections cholqr --budget 70
echo "== 3. GPU tests  (t=$(( $(date +%s) - T0 ))s)"
timeout 170 python3 -m pytest -q -m gpu tests/gpu -p no:cacheprovider -rfE --durations=5 > "$OUT/gpu_tests.txt" 2>&1
echo "exit $?"; tail -n 14 "$OUT/gpu_tests.txt"
echo "== 4. checks  (t=$(( $(date +%s) - T0 ))s)"
timeout 50 python3 -m adaptqr check --cases tests > "$OUT/check_tests.txt" 2>/dev/null; echo "tests: exit $?"; tail -n 3 "$OUT/check_tests.txt"
timeout 50 python3 -m adaptqr check --cases bench/devscripts/cases_other_seeds.json > "$OUT/check_other_seeds.txt" 2>/dev/null; echo "other seeds: exit $?"; tail -n 3 "$OUT/check_other_seeds.txt"
echo "== done  (t=$(( $(date +%s) - T0 ))s)"
