#!/usr/bin/env bash
# Session 7, issue 8 (EXPERIMENTS.md N4), H200: the FP16 route's trailing update.
#   1. fp16_diag.py time: FP32 / FP16 routes, FP16 row chunk 128, column tile 128
#   2. ncu: the FP16 route's streamed trailing kernel on 640x512 dense (early and late update)
# Usage there:  ADAPTQR_COMMIT=<sha> bash bench/devscripts/next_s7c.sh
source "$(dirname "$0")/_preamble.sh"
echo "== 1. fp16_diag time"
timeout 200 python3 bench/devscripts/fp16_diag.py --sections time --time-cases 3
echo "== 2. ncu  (t=$(( $(date +%s) - T0 ))s)"
for spec in "trailing_kernel 1" "trailing_kernel 9"; do
  set -- $spec
  echo "-- ncu $1 launch $2"
  timeout 90 ncu --clock-control none -k regex:"^$1" --launch-skip "$2" --launch-count 1 \
    --section SpeedOfLight --section Occupancy --section LaunchStats --section MemoryWorkloadAnalysis \
    --section WarpStateStats --section SchedulerStats \
    python3 bench/devscripts/one_fp16.py 2>&1 | grep -E "routed|Duration|Throughput|Registers|Grid Size|Achieved Occ|Local|L2 Hit|L1/TEX Hit|DRAM|Eligible|Warp Cycles Per Issued|Dynamic Shared|Block Limit Reg|Block Limit Shared" | head -30
done
echo "== done  (t=$(( $(date +%s) - T0 ))s)"
