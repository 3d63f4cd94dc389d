#!/usr/bin/env bash
# One device call for EXPERIMENTS.md H5/P3/G2/C1 (H200):
#   1. register-panel variants (v1 / fused / fused with twice the warps) on the 12 benchmark
#      cases: time (path alone, graph replay) and accuracy at full batch; panel/trailing split
#   2. the 22 test cases at full batch with the default schedule
#   3. micro.py: host time a call (graphs on/off), probe kernels, Cholesky-QR building blocks
#   4. GPU tests of the detectors, the Householder path and the contract (sync-debug mode)
#   5. ncu of the first register-panel launches of 640x512
# Usage there:  bash bench/devscripts/run_panels.sh     (files under $OUT: log.txt, a/, b/, ...)
set -u
export PYTHONUNBUFFERED=1
OUT=${OUT:-/tmp/out}
mkdir -p "$OUT/a" "$OUT/b"
exec > >(tee -a "$OUT/log.txt") 2>&1
T0=$(date +%s)
python3 -m pip install -q --no-deps --no-build-isolation -e . >/dev/null 2>&1 || echo "pip install -e failed"
python3 -c "import adaptqr.paths.householder, torch, triton; print('torch', torch.__version__, 'triton', triton.__version__, torch.cuda.get_device_name())" || exit 1
echo "== 1. panel variants  (t=$(( $(date +%s) - T0 ))s)"
OUT="$OUT/a" timeout 230 python3 bench/devscripts/hh_bench.py --sections panels,parts --budget 200
echo "== 2. test cases, default schedule  (t=$(( $(date +%s) - T0 ))s)"
OUT="$OUT/b" timeout 70 python3 bench/devscripts/hh_bench.py --sections check_tests --budget 60
echo "== 3. micro  (t=$(( $(date +%s) - T0 ))s)"
timeout 100 python3 bench/devscripts/micro.py --sections host,probe,chol
echo "== 4. GPU tests  (t=$(( $(date +%s) - T0 ))s)"
timeout 110 python3 -m pytest -q -m gpu tests/gpu/test_detectors_gpu.py tests/gpu/test_householder_gpu.py tests/gpu/test_contract_gpu.py -p no:cacheprovider -rfE > "$OUT/gpu_tests.txt" 2>&1
echo "gpu tests exit $?"; tail -n 15 "$OUT/gpu_tests.txt"
echo "== 5. ncu  (t=$(( $(date +%s) - T0 ))s)"
timeout 60 ncu --clock-control none --kernel-name regex:panel_reg --launch-count 2 \
  --section SpeedOfLight --section WarpStateStats --section Occupancy --section LaunchStats \
  python3 -c "
import torch
from adaptqr.paths.householder import factor_householder
A = torch.randn(640, 512, 512, device='cuda'); H = A.mT.contiguous().mT; tau = A.new_empty(640, 512)
factor_householder(H, tau, None); torch.cuda.synchronize()" > "$OUT/ncu.txt" 2>&1
echo "ncu exit $?"; grep -E "Duration|Registers|Achieved Occupancy|Theoretical Occupancy|Stall|Warp Cycles" "$OUT/ncu.txt" | head -30
echo "== done  (t=$(( $(date +%s) - T0 ))s)"
