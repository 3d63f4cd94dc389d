#!/usr/bin/env bash
# Session 7, issue 8 (EXPERIMENTS.md N6), H200: reflectors in float16 from the register
# panel (fp16_v16) and Ht's store skipped where a chunk holds no float32 entry; the GPU
# tests of the FP16 route; the public call on the n = 512 / 1024 benchmark cases, default
# against ADAPTQR_FP16=0 (issue 8's comparison).
# Usage there:  ADAPTQR_COMMIT=<sha> bash bench/devscripts/next_s7e.sh
source "$(dirname "$0")/_preamble.sh"
echo "== 1. variants"
timeout 150 python3 bench/devscripts/fp16_diag.py --sections time --time-cases 3 --variants fp32,fp16,fp16_nov16
echo "== 2. GPU tests  (t=$(( $(date +%s) - T0 ))s)"
timeout 120 python3 -m pytest -q tests/gpu/test_fp16_route_gpu.py -p no:cacheprovider -rfE 2>&1 | tail -15
echo "== 3. bench  (t=$(( $(date +%s) - T0 ))s)"
mkdir -p "$OUT/main"
timeout 200 python3 -m adaptqr bench --budget 0.6 --cases bench/devscripts/cases_fp16.json \
  --env fp32:ADAPTQR_FP16=0 --out "$OUT/main"
rm -f "$OUT"/*/*.csv "$OUT"/*/*.png
echo "== done  (t=$(( $(date +%s) - T0 ))s)"
