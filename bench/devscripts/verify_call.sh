#!/usr/bin/env bash
# One device call that checks a default change of the householder path (session 22's T6):
# unseen cases and the benchmark cases at other seeds at the half gate, the householder GPU
# file, the degenerate suite (DEGENERATE_EXAMPLES, default 200), then batch 1 timed for
# geqrf and linalg.qr. Back under $OUT: log.txt, check_*.txt, gpu_tests_*.txt, single/, qr1/.
# Usage there: CASES=bench/devscripts/cases_s22_unseen.json bash bench/devscripts/verify_call.sh
# With WINDOW=1 first: prec_window_check.py, the f16x3 products' range checks (T10, QF22;
# session 36's correctness call was this with CASES=bench/devscripts/cases_s24_unseen.json).
source "$(dirname "$0")/_preamble.sh"
mkdir -p "$OUT/single" "$OUT/qr1"
if [ "${WINDOW:-0}" = 1 ]; then
  timeout 120 python3 bench/devscripts/prec_window_check.py > "$OUT/window.txt" 2>&1
  echo "window: exit $? ($(grep -c '^ok' "$OUT/window.txt") ok)"; grep -v '^ok' "$OUT/window.txt" | tail -n 5
fi
timeout 150 python3 -m adaptqr check --cases "${CASES:-bench/devscripts/cases_s22_unseen.json}" \
  > "$OUT/check_unseen.txt" 2>&1; echo "unseen: exit $?"; tail -n 3 "$OUT/check_unseen.txt"
timeout 80 python3 -m adaptqr check --cases bench/devscripts/cases_other_seeds.json \
  > "$OUT/check_other_seeds.txt" 2>&1; echo "other seeds: exit $?"; tail -n 2 "$OUT/check_other_seeds.txt"
echo "== householder file  (t=$(( $(date +%s) - T0 ))s)"
timeout 200 python3 -m pytest -q -m "gpu and not variant" tests/gpu/test_householder_gpu.py -p no:cacheprovider \
  > "$OUT/gpu_tests_householder.txt" 2>&1; echo "householder: exit $?"; tail -n 1 "$OUT/gpu_tests_householder.txt"
echo "== degenerate suite  (t=$(( $(date +%s) - T0 ))s)"
DEGENERATE_EXAMPLES=${DEGENERATE_EXAMPLES:-200} timeout 120 python3 -m pytest -q -m gpu \
  tests/gpu/test_degenerate_gpu.py -p no:cacheprovider > "$OUT/gpu_tests_c.txt" 2>&1
echo "degenerate: exit $?"; tail -n 1 "$OUT/gpu_tests_c.txt"
echo "== batch 1  (t=$(( $(date +%s) - T0 ))s)"
timeout 60 python3 -m adaptqr bench --budget 0.5 --cases single --out "$OUT/single" 2>&1 | grep -E "geomean|FAIL|rror"
timeout 60 python3 -m adaptqr bench --budget 0.5 --op qr --cases single --out "$OUT/qr1" 2>&1 | grep -E "geomean|FAIL|rror"
rm -f "$OUT"/*/*.csv
echo "== done  (t=$(( $(date +%s) - T0 ))s)"
