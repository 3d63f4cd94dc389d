#!/usr/bin/env bash
# Session 4's second device call (H200): W1 (8-warp trailing kernels) on the dense benchmark
# cases, path alone in a graph; and the kernels behind the probe's cost on 640x512
# (micro.py kernels: per-kernel device time, detectors on and off).
# Usage there:  ADAPTQR_COMMIT=<sha> bash bench/devscripts/next_s4b.sh   (files under $OUT)
source "$(dirname "$0")/_preamble.sh"
timeout 150 python3 bench/devscripts/micro.py --sections kernels
echo "== W1  (t=$(( $(date +%s) - T0 ))s)"
timeout 220 python3 bench/devscripts/hh_bench.py --sections panels --panels-dense --panels-variants base,trailing_w8 --budget 200
echo "== done  (t=$(( $(date +%s) - T0 ))s)"
