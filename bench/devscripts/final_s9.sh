#!/usr/bin/env bash
# Session 9's closing measurement (H200): the 12 qr_v2 cases with this session's defaults
# (FP16 route up to n = 2048, graphs up to 128 MiB inputs) against session 8's settings in
# one run; the test-case, other-seed and FP16-seed checks (n = 2048 included); GPU tests.
# Usage there:  ADAPTQR_COMMIT=<sha> bash bench/devscripts/final_s9.sh
source "$(dirname "$0")/_preamble.sh"
mkdir -p "$OUT/main"
python3 -c "import torch, triton; print('torch', torch.__version__, 'triton', triton.__version__, torch.cuda.get_device_name())" || exit 1
echo "== 1. bench (12 cases): default and s8:FP16_MAX_N=1024,GRAPH_MAX_INPUT=64MiB"
timeout 250 python3 -m adaptqr bench --budget 0.8 \
  --env s8:ADAPTQR_FP16_MAX_N=1024,ADAPTQR_GRAPH_MAX_INPUT=67108864 --out "$OUT/main"
rm -f "$OUT"/main/*.csv "$OUT"/main/*.png
echo "== 2. checks  (t=$(( $(date +%s) - T0 ))s)"
timeout 60 python3 -m adaptqr check --cases tests > "$OUT/check_tests.txt" 2>/dev/null; echo "tests: exit $?"; tail -n 3 "$OUT/check_tests.txt"
timeout 60 python3 -m adaptqr check --cases bench/devscripts/cases_other_seeds.json > "$OUT/check_other_seeds.txt" 2>/dev/null; echo "other seeds: exit $?"; tail -n 3 "$OUT/check_other_seeds.txt"
timeout 80 python3 -m adaptqr check --cases bench/devscripts/cases_fp16_2048_seeds.json > "$OUT/check_fp16_2048.txt" 2>/dev/null; echo "fp16 2048 seeds: exit $?"; cat "$OUT/check_fp16_2048.txt" | tail -n 14
echo "== 3. GPU tests  (t=$(( $(date +%s) - T0 ))s)"
timeout 130 python3 -m pytest -q -m "gpu and not variant" tests/gpu/test_fp16_route_gpu.py \
  tests/gpu/test_graphs_gpu.py tests/gpu/test_contract_gpu.py -p no:cacheprovider -rfE \
  > "$OUT/gpu_tests.txt" 2>&1
echo "gpu tests exit $?"; tail -n 6 "$OUT/gpu_tests.txt"
echo "== done  (t=$(( $(date +%s) - T0 ))s)"
