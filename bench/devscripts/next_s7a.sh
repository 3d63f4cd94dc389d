#!/usr/bin/env bash
# Session 7's first call (H200): issue 8's ceiling and the T kernel's profile.
#   1. N2: FP16 / one-pass TF32 trailing products on the dense cases up to n = 1024, path
#      alone in a graph, with accuracy (hh_bench.py panels: base, prec_tf32, prec_fp16)
#   2. the GPU test of P5 / P8 that session 6 could not run
#   3. ncu: 640x512 dense, the T kernel (early and late launch) and the streamed trailing
#      kernel (early launch): stalls, DRAM and L2 figures
# Usage there:  ADAPTQR_COMMIT=<sha> bash bench/devscripts/next_s7a.sh
source "$(dirname "$0")/_preamble.sh"
echo "== 1. N2"
timeout 200 python3 bench/devscripts/hh_bench.py --sections panels --panels-dense --panels-max-n 1024 \
  --panels-variants base,prec_tf32,prec_fp16 --budget 180 | grep -v "^check"
echo "== 2. GPU test  (t=$(( $(date +%s) - T0 ))s)"
timeout 90 python3 -m pytest -q -x tests/gpu -k "t_from_the_panels" 2>&1 | tail -3
echo "== 3. ncu  (t=$(( $(date +%s) - T0 ))s)"
cat > /tmp/one.py <<'PY'
import torch
from adaptqr.paths import householder
B, n = 640, 512
A = torch.randn(B, n, n, device="cuda")
H = torch.empty_strided(A.shape, (n * n, 1, n), device="cuda"); H.copy_(A)
tau = torch.empty(B, n, device="cuda")
householder.factor_householder(H, tau, None)
torch.cuda.synchronize()
PY
for spec in "panel_t_kernel 1" "panel_t_kernel 13" "trailing_kernel 1" "panel_reg_kernel 1"; do
  set -- $spec
  echo "-- ncu $1 launch $2"
  timeout 60 ncu --clock-control none -k regex:"^$1" --launch-skip "$2" --launch-count 1 \
    --section SpeedOfLight --section Occupancy --section LaunchStats --section MemoryWorkloadAnalysis \
    --section WarpStateStats --section SchedulerStats \
    python3 /tmp/one.py 2>&1 | grep -E "Duration|Throughput|Occupancy|Registers|Grid Size|Block Size|Waves|Achieved|Local|L2 Hit|L1/TEX Hit|DRAM|Stall|Issued|Eligible|Warp Cycles|Shared Memory Config|Dynamic Shared|Static Shared|Block Limit" | head -40
done
echo "== done  (t=$(( $(date +%s) - T0 ))s)"
