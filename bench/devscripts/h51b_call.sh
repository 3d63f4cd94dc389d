#!/usr/bin/env bash
# Session 56's last call: H51b (the Gram build past 64 matrices for panels of at most 256
# rows, the default) against gram_small_batch=0 and gram_max_batch=640, and the Gram
# degenerate GPU test (100 matrices of 256 rows on the build). Run there:
# bash bench/devscripts/h51b_call.sh
source "$(dirname "$0")/_preamble.sh"
nvidia-smi --query-gpu=name --format=csv,noheader
echo "== gram tests"
timeout 90 python3 -m pytest -q -m gpu -p no:cacheprovider -rfE tests/gpu/test_householder_gpu.py \
  -k "gram_panel_degenerate or gram_panel_matches"
echo "== h51b (t=$(( $(date +%s) - T0 ))s)"
timeout 200 python3 -m adaptqr bench --budget 0.4 --no-baseline --out "$OUT/h51b" \
  --cases bench/devscripts/cases_h51.json --knobs off:gram_small_batch=0 --knobs g640:gram_max_batch=640
rm -f "$OUT"/*/*.csv "$OUT"/*/*.png
echo "elapsed $(( $(date +%s) - T0 )) s"
