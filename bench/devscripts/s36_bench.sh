#!/usr/bin/env bash
# Session 36: the f16x3 defaults (T10, QF22) measured and re-checked in one call: the
# degenerate suite (geqrf and linalg.qr), the unseen cases at the bar, then the 12 cases
# with the torch baseline beside the tf32x3 products (knobs), householder_product and
# linalg.qr on the 12 cases, batch 1. Back under $OUT: log.txt, gpu_tests_c.txt,
# check_s24_unseen.txt, b12/, hp/, qr/, single/.
source "$(dirname "$0")/_preamble.sh"
mkdir -p "$OUT/b12" "$OUT/hp" "$OUT/qr" "$OUT/single"
DEGENERATE_EXAMPLES=${DEGENERATE_EXAMPLES:-200} timeout 110 python3 -m pytest -q -m gpu \
  tests/gpu/test_degenerate_gpu.py -p no:cacheprovider -rfE > "$OUT/gpu_tests_c.txt" 2>&1
echo "degenerate: exit $?  (t=$(( $(date +%s) - T0 ))s)"; tail -n 2 "$OUT/gpu_tests_c.txt"
timeout 100 python3 -m adaptqr check --cases bench/devscripts/cases_s24_unseen.json > "$OUT/check_s24_unseen.txt" 2>&1
echo "unseen: exit $?  (t=$(( $(date +%s) - T0 ))s)"; tail -n 2 "$OUT/check_s24_unseen.txt"
timeout 150 python3 -m adaptqr bench --budget 0.5 --out "$OUT/b12" \
  --knobs tf32x3:trailing_prec=tf32x3 2>&1 | grep -E "geomean|wrote|FAIL|rror"
echo "b12  (t=$(( $(date +%s) - T0 ))s)"
timeout 60 python3 -m adaptqr bench --op householder_product --no-baseline --budget 0.3 --out "$OUT/hp" \
  --cases bench --knobs tf32x3:qform_prec=tf32x3 2>&1 | grep -E "geomean|wrote|FAIL|rror"
echo "hp  (t=$(( $(date +%s) - T0 ))s)"
timeout 50 python3 -m adaptqr bench --budget 0.5 --out "$OUT/single" --cases single 2>&1 | grep -E "geomean|wrote|FAIL|rror"
echo "single  (t=$(( $(date +%s) - T0 ))s)"
timeout 60 python3 -m adaptqr bench --op qr --budget 0.3 --out "$OUT/qr" --cases bench+optimizer 2>&1 \
  | grep -E "geomean|wrote|FAIL|rror"
rm -f "$OUT"/*/*.csv "$OUT"/*/*.png
echo "== done (t=$(( $(date +%s) - T0 ))s)"
