#!/usr/bin/env bash
# Session 8's closing measurement (H200), issue 8: the 12 qr_v2 cases with the FP16 route
# (default) and with ADAPTQR_FP16=0 in one run; the test-case and other-seed checks; 5 other
# seeds of the FP16 cases at full batch; the GPU tests of the route, the Householder path
# and the public contract (the rest of tests/gpu did not fit the call beside the bench).
# Usage there:  ADAPTQR_COMMIT=<sha> bash bench/devscripts/final_s8.sh
source "$(dirname "$0")/_preamble.sh"
mkdir -p "$OUT/main"
python3 -c "import torch, triton; print('torch', torch.__version__, 'triton', triton.__version__, torch.cuda.get_device_name())" || exit 1
echo "== 1. bench (12 cases): FP16 route and fp32:ADAPTQR_FP16=0"
timeout 240 python3 -m adaptqr bench --budget 0.8 --env fp32:ADAPTQR_FP16=0 --out "$OUT/main"
rm -f "$OUT"/main/*.csv "$OUT"/main/*.png
echo "== 2. checks  (t=$(( $(date +%s) - T0 ))s)"
timeout 60 python3 -m adaptqr check --cases tests > "$OUT/check_tests.txt" 2>/dev/null; echo "tests: exit $?"; tail -n 3 "$OUT/check_tests.txt"
timeout 60 python3 -m adaptqr check --cases bench/devscripts/cases_other_seeds.json > "$OUT/check_other_seeds.txt" 2>/dev/null; echo "other seeds: exit $?"; tail -n 3 "$OUT/check_other_seeds.txt"
timeout 90 python3 -m adaptqr check --cases bench/devscripts/cases_fp16_seeds.json > "$OUT/check_fp16_seeds.txt" 2>/dev/null; echo "fp16 seeds: exit $?"; tail -n 3 "$OUT/check_fp16_seeds.txt"
echo "== 3. GPU tests  (t=$(( $(date +%s) - T0 ))s)"
timeout 150 python3 -m pytest -q -m "gpu and not variant" tests/gpu/test_fp16_route_gpu.py \
  tests/gpu/test_householder_gpu.py tests/gpu/test_contract_gpu.py -p no:cacheprovider -rfE \
  > "$OUT/gpu_tests.txt" 2>&1
echo "gpu tests exit $?"; tail -n 6 "$OUT/gpu_tests.txt"
echo "== done  (t=$(( $(date +%s) - T0 ))s)"
