#!/usr/bin/env bash
# Session 5's last device call (H200): F1 (no W fill between row-split panels) against the
# kernels before it (ab_old/, untracked copies carried to the device), path alone in a graph
# on 2x4096; then validate.sh (12-case bench, graphs on/off, GPU tests, checks).
# Usage there:  ADAPTQR_COMMIT=<sha> bash bench/devscripts/next_final.sh   (files under $OUT)
source "$(dirname "$0")/_preamble.sh"
ab() {  # $1: label
  mkdir -p "$OUT/ab_$1"
  OUT="$OUT/ab_$1" timeout 80 python3 bench/devscripts/hh_bench.py --sections split_panels --split-n 4096 --split-variants base --budget 70
}
echo "== F1 new"; ab new
if [ -f ab_old/householder.py ]; then
  mkdir -p /tmp/new && cp paths/householder.py paths/kernels/trailing.py /tmp/new/
  cp ab_old/householder.py paths/householder.py; cp ab_old/trailing.py paths/kernels/trailing.py
  echo "== F1 old  (t=$(( $(date +%s) - T0 ))s)"; ab old
  cp /tmp/new/householder.py paths/householder.py; cp /tmp/new/trailing.py paths/kernels/trailing.py
fi
echo "== validate  (t=$(( $(date +%s) - T0 ))s)"
OUT="$OUT/v" bash bench/devscripts/validate.sh
