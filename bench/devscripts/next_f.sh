#!/usr/bin/env bash
# F1 / F2 / P4 (EXPERIMENTS.md), one device call (H200), path alone in a graph with accuracy:
#   default (F1: no W fill between row-split panels) against the kernels before F1 (ab_old/,
#   untracked copies carried to the device), and the off-by-default knobs split_waves (F2)
#   and split_atomic (P4), on 2x4096, 8x2048 (and waves on 60x1024).
# Usage there:  ADAPTQR_COMMIT=<sha> bash bench/devscripts/next_f.sh   (files under $OUT)
source "$(dirname "$0")/_preamble.sh"
hb() {  # $1: label, $2: n, $3: variants
  mkdir -p "$OUT/$1_n$2"
  OUT="$OUT/$1_n$2" timeout 150 python3 bench/devscripts/hh_bench.py --sections split_panels --split-n $2 --split-variants $3 --budget 140
}
hb new 4096 base,waves,atomic,waves_atomic
hb new 2048 base,waves,atomic,waves_atomic
hb new 1024 base,waves
if [ -f ab_old/householder.py ]; then
  mkdir -p /tmp/new && cp paths/householder.py paths/kernels/trailing.py /tmp/new/
  cp ab_old/householder.py paths/householder.py; cp ab_old/trailing.py paths/kernels/trailing.py
  echo "== before F1  (t=$(( $(date +%s) - T0 ))s)"; hb old 4096 base; hb old 2048 base
  cp /tmp/new/householder.py paths/householder.py; cp /tmp/new/trailing.py paths/kernels/trailing.py
fi
echo "== done  (t=$(( $(date +%s) - T0 ))s)"
