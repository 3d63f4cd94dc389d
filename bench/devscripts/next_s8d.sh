#!/usr/bin/env bash
# Session 8, issue 8 (EXPERIMENTS.md N10): the pair update at fp16_bn 128 with the fitted
# column tile, its stages, calibration, the host's share and the kernel timeline (H200).
# Usage there:  ADAPTQR_COMMIT=<sha> bash bench/devscripts/next_s8d.sh
source "$(dirname "$0")/_preamble.sh"
echo "== 1. path alone"
timeout 150 python3 bench/devscripts/fp16_diag.py --sections time --time-cases 3 \
  --variants fp32,fp32_nofit,fp16,fp16_nofit,fp16_bn64,fp16_bn128_s2,fp16_bn128_s4
cp "$OUT/fp16_diag.json" "$OUT/fp16_diag_time.json"
echo "== 2. calibration  (t=$(( $(date +%s) - T0 ))s)"
timeout 120 python3 bench/devscripts/fp16_diag.py --sections calib
echo "== 3. host time  (t=$(( $(date +%s) - T0 ))s)"
timeout 60 python3 bench/devscripts/host_time.py --shape 640x512 2>&1 | grep -E "ADAPTQR_FP16|host ms"
echo "== 4. trace  (t=$(( $(date +%s) - T0 ))s)"
timeout 90 python3 bench/devscripts/trace.py --shapes 640x512 --cond 2 --fp16-compare
echo "== done  (t=$(( $(date +%s) - T0 ))s)"
