#!/usr/bin/env bash
# P2 (EXPERIMENTS.md), one device call (H200): the row-split panel at 1 and 2 warps against
# its tile rule (4 at 64 x 32), path alone in a graph with accuracy, on 2x4096 and 8x2048.
# Usage there:  ADAPTQR_COMMIT=<sha> bash bench/devscripts/next_p2.sh   (files under $OUT)
source "$(dirname "$0")/_preamble.sh"
for n in 4096 2048; do
  mkdir -p "$OUT/n$n"
  OUT="$OUT/n$n" timeout 150 python3 bench/devscripts/hh_bench.py --sections split_panels --split-n $n --split-variants ${VARIANTS:-base,sw1,sw2} --budget 140
done
echo "== done  (t=$(( $(date +%s) - T0 ))s)"
