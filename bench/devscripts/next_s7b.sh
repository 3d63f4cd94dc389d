#!/usr/bin/env bash
# Session 7, issue 8 (EXPERIMENTS.md N3), H200: the FP16-resident trailing matrix.
#   1. fp16_diag.py: path alone, FP32 route against routed FP16 (time, accuracy), then the
#      estimate's calibration (every matrix forced to FP16)
#   2. the public call on the n = 512 / 1024 benchmark cases, default against ADAPTQR_FP16=0
# Usage there:  ADAPTQR_COMMIT=<sha> bash bench/devscripts/next_s7b.sh
source "$(dirname "$0")/_preamble.sh"
echo "== 1. fp16_diag"
timeout 300 python3 bench/devscripts/fp16_diag.py --sections time,calib
echo "== 2. bench  (t=$(( $(date +%s) - T0 ))s)"
mkdir -p "$OUT/main"
timeout 200 python3 -m adaptqr bench --budget 0.6 --cases bench/devscripts/cases_fp16.json \
  --env fp32:ADAPTQR_FP16=0 --out "$OUT/main"
rm -f "$OUT"/*/*.csv "$OUT"/*/*.png
echo "== done  (t=$(( $(date +%s) - T0 ))s)"
