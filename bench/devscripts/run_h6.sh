#!/usr/bin/env bash
# One device call for EXPERIMENTS.md H6 / G2 / P3 (H200):
#   1. register-panel variants (hh_bench PANEL_VARIANTS) on the 12 benchmark cases: time and
#      accuracy at full batch
#   2. micro.py: host time a call (graphs on/off, output slots), the route probe's kernels
#   3. adaptqr bench on the launch-bound cases, graphs on and off (issue 7's ratio)
#   4. GPU tests of the graph cache and the detectors, then the contract tests
# Usage there:  ADAPTQR_COMMIT=<sha> bash bench/devscripts/run_h6.sh   (files under $OUT)
set -u
export PYTHONUNBUFFERED=1
OUT=${OUT:-/tmp/out}
mkdir -p "$OUT/a" "$OUT/small"
exec > >(tee -a "$OUT/log.txt") 2>&1
T0=$(date +%s)
python3 -m pip install -q --no-deps --no-build-isolation -e . >/dev/null 2>&1 || echo "pip install -e failed"
python3 -c "import adaptqr.paths.householder, torch, triton; print('torch', torch.__version__, 'triton', triton.__version__, torch.cuda.get_device_name())" || exit 1
echo "== 1. panel variants  (t=$(( $(date +%s) - T0 ))s)"
OUT="$OUT/a" timeout 200 python3 bench/devscripts/hh_bench.py --sections panels --budget 170
echo "== 2. micro  (t=$(( $(date +%s) - T0 ))s)"
timeout 60 python3 bench/devscripts/micro.py --sections host,probe
echo "== 3. graphs on/off  (t=$(( $(date +%s) - T0 ))s)"
timeout 45 python3 -m adaptqr bench --budget 1.5 --cases bench/devscripts/cases_small.json --env nographs:ADAPTQR_GRAPHS=0 --out "$OUT/small"
rm -f "$OUT"/*/*.csv "$OUT"/*/*.png
echo "== 4. GPU tests  (t=$(( $(date +%s) - T0 ))s)"
timeout 100 python3 -m pytest -q -m gpu tests/gpu/test_graphs_gpu.py tests/gpu/test_detectors_gpu.py -p no:cacheprovider -rfE > "$OUT/gpu_tests.txt" 2>&1
echo "gpu tests exit $?"; tail -n 12 "$OUT/gpu_tests.txt"
timeout 90 python3 -m pytest -q -m gpu tests/gpu/test_contract_gpu.py -p no:cacheprovider -rfE --durations=5 > "$OUT/gpu_tests_contract.txt" 2>&1
echo "contract tests exit $?"; tail -n 14 "$OUT/gpu_tests_contract.txt"
echo "== done  (t=$(( $(date +%s) - T0 ))s)"
