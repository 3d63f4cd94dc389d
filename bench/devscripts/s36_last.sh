#!/usr/bin/env bash
# Session 36's last call (QF22's two launches): the degenerate suite (DEGENERATE_EXAMPLES,
# default 60), then householder_product and geqrf side by side on the five cases where
# householder_product was over geqrf in run 1946. Back under $OUT: log.txt,
# gpu_tests_c.txt, hp/, geqrf/.
source "$(dirname "$0")/_preamble.sh"
mkdir -p "$OUT/hp" "$OUT/geqrf"
DEGENERATE_EXAMPLES=${DEGENERATE_EXAMPLES:-60} timeout 110 python3 -m pytest -q -m gpu \
  tests/gpu/test_degenerate_gpu.py -p no:cacheprovider -rfE > "$OUT/gpu_tests_c.txt" 2>&1
echo "degenerate: exit $?  (t=$(( $(date +%s) - T0 ))s)"; tail -n 2 "$OUT/gpu_tests_c.txt"
for op in householder_product geqrf; do
  timeout 40 python3 -m adaptqr bench --op $op --no-baseline --budget 0.3 --out "$OUT/${op/householder_product/hp}" \
    --cases bench/devscripts/cases_hp_geqrf.json 2>&1 | grep -E "^6|geomean|FAIL|rror"
done
rm -f "$OUT"/*/*.csv "$OUT"/*/*.png
echo "== done (t=$(( $(date +%s) - T0 ))s)"
