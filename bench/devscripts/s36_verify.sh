#!/usr/bin/env bash
# Session 36: correctness of the f16x3 defaults (T10, QF22) in one call: the range checks
# (prec_window_check.py), the 12 cases at five other seeds and 12 unseen cases at the bar,
# the degenerate suite (geqrf and linalg.qr), the householder / Q-formation / FP16 / detector
# GPU files. Back under $OUT: log.txt, window.txt, check_*.txt, gpu_tests*.txt.
source "$(dirname "$0")/_preamble.sh"
timeout 120 python3 bench/devscripts/prec_window_check.py > "$OUT/window.txt" 2>&1
echo "window: exit $? ($(grep -c '^ok' "$OUT/window.txt") ok)  (t=$(( $(date +%s) - T0 ))s)"; grep -v '^ok' "$OUT/window.txt" | tail -n 5
for f in other_seeds seeds5_rest s24_unseen; do
  timeout 70 python3 -m adaptqr check --cases "bench/devscripts/cases_$f.json" > "$OUT/check_$f.txt" 2>/dev/null
  echo "$f: exit $?  (t=$(( $(date +%s) - T0 ))s)"; tail -n 2 "$OUT/check_$f.txt"
done
DEGENERATE_EXAMPLES=${DEGENERATE_EXAMPLES:-200} timeout 110 python3 -m pytest -q -m gpu \
  tests/gpu/test_degenerate_gpu.py -p no:cacheprovider -rfE > "$OUT/gpu_tests_c.txt" 2>&1
echo "degenerate: exit $?  (t=$(( $(date +%s) - T0 ))s)"; tail -n 2 "$OUT/gpu_tests_c.txt"
timeout "${FILES_TIMEOUT:-150}" python3 -m pytest -q -m "gpu and not variant" -p no:cacheprovider -rfE \
  tests/gpu/test_qform_gpu.py tests/gpu/test_fp16_route_gpu.py tests/gpu/test_detectors_gpu.py \
  tests/gpu/test_householder_gpu.py > "$OUT/gpu_tests.txt" 2>&1
echo "gpu files: exit $?  (t=$(( $(date +%s) - T0 ))s)"; tail -n 6 "$OUT/gpu_tests.txt"
echo "== done (t=$(( $(date +%s) - T0 ))s)"
