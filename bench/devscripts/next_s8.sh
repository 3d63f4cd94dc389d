#!/usr/bin/env bash
# Prepared in session 7 for the next (H200), issue 8 (EXPERIMENTS.md N7, candidates 1-2):
#   1. kernel timelines of the public call, FP16 route against ADAPTQR_FP16=0, on 640x512 and
#      60x1024 (cond 2: where the route is taken) and on 8x2048 with the route offered there
#      (it lost 16.38 against 11.58 ms through the public call in run 1805)
#   2. N8: register caps (maxnreg) of the FP16-only (128) and FP32 (168) streamed updates,
#      path alone
#   3. ncu of the FP16-only streamed trailing kernel (640x512, the second update's): registers
#      (158 offline with the device's specialization), blocks an SM, shared memory, stalls
#   4. issue 9 (C3): FP64 tensor-core GEMM in Triton against cuBLAS, cuSOLVER's FP64 Cholesky
# Usage there:  ADAPTQR_COMMIT=<sha> bash bench/devscripts/next_s8.sh
source "$(dirname "$0")/_preamble.sh"
echo "== 1. traces"
timeout 200 python3 bench/devscripts/trace.py --shapes 640x512,60x1024,8x2048 --cond 2 \
  --fp16-compare --fp16-max-n 2048
echo "== 2. register caps  (t=$(( $(date +%s) - T0 ))s)"
timeout 200 python3 bench/devscripts/fp16_diag.py --sections time --time-cases 3 \
  --variants fp32,fp16,fp16_r128,fp16_r128_s2,fp32_r168,fp16_r128_r168
echo "== 3. ncu  (t=$(( $(date +%s) - T0 ))s)"
timeout 90 ncu --clock-control none -k regex:"^trailing_kernel" --launch-skip 3 --launch-count 1 \
  --section SpeedOfLight --section Occupancy --section LaunchStats --section MemoryWorkloadAnalysis \
  --section WarpStateStats python3 bench/devscripts/one_fp16.py 2>&1 | grep -E "Duration|Throughput|Registers|Grid Size|Achieved Occ|L2 Hit|DRAM|Eligible|Dynamic Shared|Block Limit" | head -24
echo "== 4. fp64 rates  (t=$(( $(date +%s) - T0 ))s)"
timeout 120 python3 bench/devscripts/fp64_rate.py
echo "== done  (t=$(( $(date +%s) - T0 ))s)"
