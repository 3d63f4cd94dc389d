#!/usr/bin/env bash
# Session 56's third call: the cluster GPU tests under H48's default (cluster_ctas=256) and
# H48b's two-CTA clusters, H48b beside the default, then the 12 cases on the new default.
# Run there: bash bench/devscripts/h48b_call.sh
source "$(dirname "$0")/_preamble.sh"
nvidia-smi --query-gpu=name --format=csv,noheader
echo "== cluster tests"
timeout 200 python3 -m pytest -q -m gpu -p no:cacheprovider -rfE tests/gpu/test_householder_gpu.py \
  -k "cluster_budget or gram_panel_degenerate"
echo "== h48b (t=$(( $(date +%s) - T0 ))s)"
timeout 150 python3 -m adaptqr bench --budget 0.4 --no-baseline --out "$OUT/h48b" \
  --cases bench/devscripts/cases_h48b.json --knobs p64:cluster_pair_ctas=64 \
  --knobs p128:cluster_pair_ctas=128
echo "== b12 (t=$(( $(date +%s) - T0 ))s)"
timeout 200 python3 -m adaptqr bench --budget 0.4 --out "$OUT/b12"
rm -f "$OUT"/*/*.csv "$OUT"/*/*.png
echo "elapsed $(( $(date +%s) - T0 )) s"
