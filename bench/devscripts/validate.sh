#!/usr/bin/env bash
# One device call that measures and checks everything a session resolves (H200):
#   1. adaptqr bench on the 12 qr_v2 cases, default dispatch and ADAPTQR_DETECT=0 (probe cost)
#   2. the launch-bound cases with and without CUDA graphs (ADAPTQR_GRAPHS=0)
#   3. the large dense cases with and without the eager policy for large inputs, and with
#      fewer programs per tall panel (ADAPTQR_SPLIT_MIN_ROWS 128, 256; 8x2048 and 2x4096 only)
#   4. every GPU test
#   5. with SPLIT_SWEEP=1: the row-split knobs on 8x2048 / 2x4096 (data for the next candidates)
# Usage there:  ADAPTQR_COMMIT=<sha> bash bench/devscripts/validate.sh
# Back under $OUT (at most 8 files): log.txt, main/*.json, small/*.json, large/*.json,
# gpu_tests.txt, hh_bench.json.
set -u
export PYTHONUNBUFFERED=1
OUT=${OUT:-/tmp/out}
mkdir -p "$OUT/main" "$OUT/small" "$OUT/large"
exec > >(tee -a "$OUT/log.txt") 2>&1
T0=$(date +%s)
python3 -m pip install -q --no-deps --no-build-isolation -e . >/dev/null 2>&1 || echo "pip install -e failed (the checkout maps its own subpackages)"
python3 -c "import adaptqr.paths.householder, adaptqr.detectors, adaptqr.graphs, torch, triton; print('torch', torch.__version__, 'triton', triton.__version__, torch.cuda.get_device_name())" || exit 1
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,temperature.gpu --format=csv
echo "== 1. bench (12 cases): default and noprobe"
timeout 210 python3 -m adaptqr bench --budget 1.5 --env noprobe:ADAPTQR_DETECT=0 --out "$OUT/main"
echo "== 2. graphs on/off, launch-bound cases  (t=$(( $(date +%s) - T0 ))s)"
timeout 35 python3 -m adaptqr bench --budget 1.5 --cases bench/devscripts/cases_small.json --env nographs:ADAPTQR_GRAPHS=0 --out "$OUT/small"
echo "== 3. large dense cases: graphs for every size; row-split panel sizes  (t=$(( $(date +%s) - T0 ))s)"
timeout 85 python3 -m adaptqr bench --budget 1.5 --cases bench/devscripts/cases_large.json --env graphsall:ADAPTQR_GRAPH_MAX_INPUT=1000000000000 --env smr128:ADAPTQR_SPLIT_MIN_ROWS=128 --env smr256:ADAPTQR_SPLIT_MIN_ROWS=256 --out "$OUT/large"
rm -f "$OUT"/*/*.csv "$OUT"/*/*.png
echo "== 4. GPU tests  (t=$(( $(date +%s) - T0 ))s)"
timeout 90 python3 -m pytest -q -m gpu tests/gpu/test_graphs_gpu.py tests/gpu/test_detectors_gpu.py tests/gpu/test_contract_gpu.py tests/gpu/test_householder_gpu.py tests/gpu/test_reference_gpu.py tests/gpu -p no:cacheprovider -rfE --durations=12 > "$OUT/gpu_tests.txt" 2>&1
echo "gpu tests exit $?"; tail -n 25 "$OUT/gpu_tests.txt"
if [ "${SPLIT_SWEEP:-0}" = 1 ]; then
  echo "== 5. split knobs  (t=$(( $(date +%s) - T0 ))s)"
  timeout 60 python3 bench/devscripts/hh_bench.py --sections split --budget 50
fi
echo "== done  (t=$(( $(date +%s) - T0 ))s)"
