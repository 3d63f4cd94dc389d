#!/usr/bin/env bash
# Session 56's second call: the GPU tests with routes composed by default (N31), then H48
# (clusters for larger batches' panels while B * MB / 128 CTAs fit cluster_ctas) beside
# the default on ten batch shapes. Run there: bash bench/devscripts/h48_call.sh
source "$(dirname "$0")/_preamble.sh"
nvidia-smi --query-gpu=name --format=csv,noheader
echo "== gpu_tests"
timeout 220 python3 -m pytest -q -m "gpu and not variant" -p no:cacheprovider -rfE \
  tests/gpu/test_fp16_route_gpu.py tests/gpu/test_degenerate_gpu.py
echo "== h48 (t=$(( $(date +%s) - T0 ))s)"
timeout 330 python3 -m adaptqr bench --budget 0.4 --no-baseline --out "$OUT/h48" \
  --cases bench/devscripts/cases_h48.json --knobs ct192:cluster_ctas=192 \
  --knobs ct256:cluster_ctas=256 --knobs ct256r:cluster_ctas=256,cluster_small_rows=128
rm -f "$OUT"/*/*.csv "$OUT"/*/*.png
echo "elapsed $(( $(date +%s) - T0 )) s"
