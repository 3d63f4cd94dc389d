#!/usr/bin/env bash
# Session 28's diagnostic call: where 40x176 / 40x352 spend their time (and clusters for
# batches above 32), and ncu of QF20's CUDA C Q strip kernel at 640x512.
source "$(dirname "$0")/_preamble.sh"
mkdir -p "$OUT/sweep"
echo "== trace (t=$(( $(date +%s) - T0 ))s)"
timeout 120 python3 bench/devscripts/trace.py --shapes 40x176,40x352 --knobs c64:cluster_small_batch=64 > "$OUT/trace.txt" 2>&1
echo "trace: exit $?"
echo "== small cases (t=$(( $(date +%s) - T0 ))s)"
timeout 120 python3 -m adaptqr bench --budget 0.5 --no-baseline --out "$OUT/sweep" --cases bench/devscripts/cases_small.json \
  --knobs c64:cluster_small_batch=64 2>&1 | grep -E "geomean|wrote|FAIL|rror"
echo "== ncu qform_cuda (t=$(( $(date +%s) - T0 ))s)"
ONE_CALL_OP=householder_product ONE_CALL_KNOBS=qform_cuda=32 ADAPTQR_GRAPHS=0 timeout 150 ncu --clock-control none \
  --nvtx --nvtx-include "profile/" --kernel-name "regex:qform" --launch-count 3 \
  --section SpeedOfLight --section Occupancy --section LaunchStats --section WarpStateStats \
  --section MemoryWorkloadAnalysis --section ComputeWorkloadAnalysis --section SourceCounters \
  python3 bench/devscripts/one_call.py 640x512 > "$OUT/ncu_qform.txt" 2>&1
echo "ncu: exit $?"
grep -E "^  [a-z_]+.*\(|Duration|Throughput|Achieved Occupancy|Registers Per|Stall|Bank" "$OUT/ncu_qform.txt" | head -60
rm -f "$OUT"/*/*.csv
echo "== done (t=$(( $(date +%s) - T0 ))s)"
