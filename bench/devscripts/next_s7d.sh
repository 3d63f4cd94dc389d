#!/usr/bin/env bash
# Session 7, issue 8 (EXPERIMENTS.md N5), H200: the FP16 route's launches and knobs, path
# alone: one launch for both routes against one a route, row chunk, warps, stages and
# column tile of the FP16-only launch (run twice: the variants changed between).
# Usage there:  ADAPTQR_COMMIT=<sha> bash bench/devscripts/next_s7d.sh
source "$(dirname "$0")/_preamble.sh"
timeout 400 python3 bench/devscripts/fp16_diag.py --sections time --time-cases 3 \
  --variants fp32,fp16,fp16_s2,fp16_bm32,fp16_bn32,fp16_bn128,fp16_bn32_bm128,fp16_bn128_bm32
echo "== done  (t=$(( $(date +%s) - T0 ))s)"
