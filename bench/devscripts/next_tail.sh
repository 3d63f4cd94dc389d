#!/usr/bin/env bash
# The measurements prepared for the next session (EXPERIMENTS.md Z1, T1), one device call
# (H200): the low-rank cases through the public call with the zero-tail skip (default), with
# one-pass TF32 for negligible-tail tiles (ADAPTQR_TAIL_PREC=tf32) and without routes
# (ADAPTQR_DETECT=0, the dense plan); adaptqr check with the TF32 tail on the 22 test cases
# and the benchmark cases at other seeds; the Householder and detector GPU tests.
# Usage there:  ADAPTQR_COMMIT=<sha> bash bench/devscripts/next_tail.sh   (files under $OUT)
source "$(dirname "$0")/_preamble.sh"
mkdir -p "$OUT/main"
timeout 200 python3 -m adaptqr bench --budget 1.5 --cases bench/devscripts/cases_lowrank.json --env tailtf32:ADAPTQR_TAIL_PREC=tf32 --env nodetect:ADAPTQR_DETECT=0 --no-baseline --out "$OUT/main" | grep -v "^  "
rm -f "$OUT"/*/*.csv "$OUT"/*/*.png
echo "== checks, TF32 tail  (t=$(( $(date +%s) - T0 ))s)"
ADAPTQR_TAIL_PREC=tf32 timeout 60 python3 -m adaptqr check --cases tests > "$OUT/check_tests_tf32tail.txt" 2>/dev/null; echo "tests: exit $?"; tail -n 3 "$OUT/check_tests_tf32tail.txt"
ADAPTQR_TAIL_PREC=tf32 timeout 60 python3 -m adaptqr check --cases bench/devscripts/cases_other_seeds.json > "$OUT/check_seeds_tf32tail.txt" 2>/dev/null; echo "other seeds: exit $?"; tail -n 3 "$OUT/check_seeds_tf32tail.txt"
echo "== GPU tests  (t=$(( $(date +%s) - T0 ))s)"
timeout 200 python3 -m pytest -q -m gpu tests/gpu/test_householder_gpu.py tests/gpu/test_detectors_gpu.py -p no:cacheprovider -rfE --durations=6 > "$OUT/gpu_tests.txt" 2>&1
echo "exit $?"; tail -n 12 "$OUT/gpu_tests.txt"
echo "== done  (t=$(( $(date +%s) - T0 ))s)"
