#!/usr/bin/env bash
# Session 5's first diagnosis (H200): where 2x4096's and 8x2048's milliseconds go.
#   1. kernel timelines, public call and path alone (trace.py: idle time, panel vs update)
#   2. the public call on the split cases, eager (default) against a CUDA graph
#      (ADAPTQR_GRAPH_MAX_INPUT raised past the input)
#   3. ncu on one early and one late split panel / W / U launch of 2x4096 (counters)
# Usage there:  ADAPTQR_COMMIT=<sha> bash bench/devscripts/next_diag.sh
source "$(dirname "$0")/_preamble.sh"
echo "== 1. trace"
timeout 150 python3 bench/devscripts/trace.py --shapes 2x4096,8x2048
echo "== 2. eager vs graph  (t=$(( $(date +%s) - T0 ))s)"
mkdir -p "$OUT/graph"
timeout 150 python3 -m adaptqr bench --budget 1.5 --cases bench/devscripts/cases_split.json \
  --env graph:ADAPTQR_GRAPH_MAX_INPUT=1099511627776 --out "$OUT/graph"
rm -f "$OUT"/*/*.csv "$OUT"/*/*.png
echo "== 3. ncu  (t=$(( $(date +%s) - T0 ))s)"
cat > /tmp/one.py <<'PY'
import torch
from adaptqr.paths import householder
A = torch.randn(2, 4096, 4096, device="cuda")
H = torch.empty_strided(A.shape, (4096 * 4096, 1, 4096), device="cuda"); H.copy_(A)
tau = torch.empty(2, 4096, device="cuda")
householder.factor_householder(H, tau, None)
torch.cuda.synchronize()
PY
for spec in "panel_split_kernel 2" "panel_split_kernel 100" "trailing_w_kernel 2" "trailing_u_kernel 2" "trailing_w_kernel 100" "trailing_u_kernel 100"; do
  set -- $spec
  echo "-- ncu $1 launch $2"
  timeout 60 ncu --clock-control none -k regex:"$1" --launch-skip "$2" --launch-count 1 \
    --section SpeedOfLight --section Occupancy --section LaunchStats --section MemoryWorkloadAnalysis \
    python3 /tmp/one.py 2>&1 | grep -E "Duration|Throughput|Occupancy|Registers|Grid Size|Block Size|Waves|Theoretical|Achieved|Local|Memory \[%\]|L2 Hit|L1/TEX Hit|DRAM" | head -30
done
echo "== done  (t=$(( $(date +%s) - T0 ))s)"
