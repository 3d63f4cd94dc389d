#!/usr/bin/env bash
# Session 9: N11 (the FP32 pair update, path alone, as prepared in next_s9.sh part 1) and
# the cholqr GPU tests (issue 9).
# Usage there:  ADAPTQR_COMMIT=<sha> bash bench/devscripts/next_s9c.sh
source "$(dirname "$0")/_preamble.sh"
echo "== 1. N11 path alone"
timeout 230 python3 bench/devscripts/fp16_diag.py --sections time --time-cases 3 \
  --variants fp32,fp32_g2,fp32_pair,fp32_pair_bm32,fp32_pair_bm32_w8,fp16,fp16_pair32,fp16_pair32_bm32
echo "== 2. cholqr GPU tests  (t=$(( $(date +%s) - T0 ))s)"
timeout 250 python3 -m pytest -q -x tests/gpu/test_cholqr_gpu.py 2>&1 | tail -25
echo "== done  (t=$(( $(date +%s) - T0 ))s)"
