#!/usr/bin/env bash
# Session 8, issue 8 (EXPERIMENTS.md N9, D4): the pair update's column tile, and the host's
# share of the public call (H200).
# Usage there:  ADAPTQR_COMMIT=<sha> bash bench/devscripts/next_s8c.sh
source "$(dirname "$0")/_preamble.sh"
echo "== 1. path alone"
timeout 200 python3 bench/devscripts/fp16_diag.py --sections time --time-cases 3 \
  --variants fp32,fp16,fp16_bn128,fp16_bn128_w8,fp16_bn128_w8_bm32,fp16_bn128_bm32,fp16_bn256_w8_bm32,fp16_bn256_w16_bm32,fp16_bn128_r168,fp16_r168
echo "== 2. host time  (t=$(( $(date +%s) - T0 ))s)"
timeout 90 python3 bench/devscripts/host_time.py --shape 640x512
echo "== done  (t=$(( $(date +%s) - T0 ))s)"
