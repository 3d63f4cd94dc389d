#!/usr/bin/env bash
# ncu of chosen kernels in one public call per shape (device script; EXPERIMENTS.md OC10,
# family 2: is the trailing update bound by DRAM, by its products or by latency?).
#   NCU_SHAPES   shapes, BxN (default "640x512 2x4096")
#   NCU_KERNELS  a regex of kernel names (default "trailing")
#   NCU_COUNT    launches profiled a shape (default 6)
#   NCU_EXTRA    more ncu options, e.g. "--section SchedulerStats --section SourceCounters"
#                (stall reasons by source line) or "--launch-skip 2"
#   NCU_TAG      a suffix of the output files (several knob settings in one call: set
#                ONE_CALL_KNOBS, bench/devscripts/one_call.py, and a tag for each)
# Graphs off (every launch is a kernel of its own); the call after one warm-up
# (bench/devscripts/one_call.py, NVTX range "profile"). Clocks left alone.
# Back under $OUT: log.txt, ncu_<shape>[_<tag>].txt.
source "$(dirname "$0")/_preamble.sh"
for shape in ${NCU_SHAPES:-640x512 2x4096}; do
  # NCU_EXTRA holds several options: split on purpose.
  # shellcheck disable=SC2086
  ADAPTQR_GRAPHS=0 timeout "${NCU_TIMEOUT:-240}" ncu --clock-control none --nvtx --nvtx-include "profile/" \
    --kernel-name "regex:${NCU_KERNELS:-trailing}" --launch-count "${NCU_COUNT:-6}" \
    --section SpeedOfLight --section Occupancy --section LaunchStats --section WarpStateStats \
    --section MemoryWorkloadAnalysis ${NCU_EXTRA:-} \
    python3 bench/devscripts/one_call.py "$shape" > "$OUT/ncu_$shape${NCU_TAG:+_$NCU_TAG}.txt" 2>&1
  echo "$shape: exit $?  (t=$(( $(date +%s) - T0 ))s)"
  grep -E "^  [a-z_]+.*\(|Duration|Memory Throughput|DRAM Throughput|Compute \(SM\) Throughput|Achieved Occupancy|Registers Per|Stall" \
    "$OUT/ncu_$shape${NCU_TAG:+_$NCU_TAG}.txt" | head -60
done
