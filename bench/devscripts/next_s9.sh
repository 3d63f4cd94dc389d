#!/usr/bin/env bash
# Prepared in session 8 for the next (H200):
#   1. EXPERIMENTS.md N11, the FP32 update two panels a pass (Schedule.pair32), path alone:
#      the FP32 route with groups of two, with and without the pair update, its row chunk
#      and warps; the FP16 route with the pair update for its FP32-routed matrices (640x512
#      mixed). If a variant wins: the public call with it as the default (adaptqr bench
#      --cases bench/devscripts/cases_fp16.json, and the 12 cases for the geomean).
#   2. EXPERIMENTS.md C5 (issue 9): CholeskyQR2 from library calls against the Householder
#      path at 8x2048 and 2x4096, and the reference reconstruction's accuracy there.
# Usage there:  ADAPTQR_COMMIT=<sha> bash bench/devscripts/next_s9.sh
source "$(dirname "$0")/_preamble.sh"
echo "== 1. path alone"
timeout 200 python3 bench/devscripts/fp16_diag.py --sections time --time-cases 3 \
  --variants fp32,fp32_g2,fp32_pair,fp32_pair_bm32,fp32_pair_bm32_w8,fp16,fp16_pair32,fp16_pair32_bm32
echo "== 2. issue 9: CholeskyQR2 from library calls (C5)  (t=$(( $(date +%s) - T0 ))s)"
timeout 240 python3 bench/devscripts/cholqr_proto.py
echo "== done  (t=$(( $(date +%s) - T0 ))s)"
