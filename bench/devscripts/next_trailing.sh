#!/usr/bin/env bash
# W1 (EXPERIMENTS.md), one device call (H200): every benchmark case, path alone in a graph,
# with the default schedule, with T built inside the panel kernel, and with 8-warp trailing
# kernels (hh_bench panels section, accuracy at full batch).
# Usage there:  ADAPTQR_COMMIT=<sha> bash bench/devscripts/next_trailing.sh   (files under $OUT)
source "$(dirname "$0")/_preamble.sh"
timeout 400 python3 bench/devscripts/hh_bench.py --sections panels --budget 380
echo "== done  (t=$(( $(date +%s) - T0 ))s)"
