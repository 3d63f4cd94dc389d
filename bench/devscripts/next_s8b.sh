#!/usr/bin/env bash
# Session 8, issue 8 (EXPERIMENTS.md N9): two panels a pass on the FP16 route (H200).
#   1. path alone: FP32 route, the pair update (default) and its knobs, one panel a pass
#   2. calibration with every matrix forced onto the route (the pair update)
#   3. public call: the FP16 benchmark cases, FP16 route against ADAPTQR_FP16=0
#   4. 5 other seeds of them (35 cases at full batch), then the FP16-route GPU tests
# Usage there:  ADAPTQR_COMMIT=<sha> bash bench/devscripts/next_s8b.sh
source "$(dirname "$0")/_preamble.sh"
echo "== 1. path alone"
timeout 150 python3 bench/devscripts/fp16_diag.py --sections time --time-cases 3 \
  --variants fp32,fp16,fp16_g1,fp16_g1_r128_s2,fp16_bm32,fp16_bm32_s2,fp16_r168,fp16_bm32_r128,fp16_bn128
cp "$OUT/fp16_diag.json" "$OUT/fp16_diag_time.json"
echo "== 2. calibration  (t=$(( $(date +%s) - T0 ))s)"
timeout 120 python3 bench/devscripts/fp16_diag.py --sections calib
echo "== 3. public call  (t=$(( $(date +%s) - T0 ))s)"
mkdir -p "$OUT/pub"
timeout 150 python3 -m adaptqr bench --budget 1.0 --cases bench/devscripts/cases_fp16.json \
  --env fp32:ADAPTQR_FP16=0 --out "$OUT/pub"
rm -f "$OUT"/pub/*.csv "$OUT"/pub/*.png
echo "== 4. other seeds, GPU tests  (t=$(( $(date +%s) - T0 ))s)"
timeout 90 python3 -m adaptqr check --cases bench/devscripts/cases_fp16_seeds.json > "$OUT/check_seeds.txt" 2>/dev/null
echo "seeds: exit $?"; tail -n 8 "$OUT/check_seeds.txt"
timeout 60 python3 -m pytest -q tests/gpu/test_fp16_route_gpu.py -p no:cacheprovider -rfE 2>&1 | tail -n 8
echo "== done  (t=$(( $(date +%s) - T0 ))s)"
