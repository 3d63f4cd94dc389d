#!/usr/bin/env bash
# F2 (EXPERIMENTS.md), one device call (H200): row-split updates sliced to whole waves (the
# default) against the program-count rule (`nowaves`), path alone in a graph with accuracy,
# on 2x4096, 8x2048 and 60x1024. (Run 1547 also measured F1 and P4, since removed.)
# Usage there:  ADAPTQR_COMMIT=<sha> bash bench/devscripts/next_f.sh   (files under $OUT)
source "$(dirname "$0")/_preamble.sh"
for n in 4096 2048 1024; do
  mkdir -p "$OUT/n$n"
  OUT="$OUT/n$n" timeout 150 python3 bench/devscripts/hh_bench.py --sections split_panels --split-n $n --split-variants base,nowaves --budget 140
done
echo "== done  (t=$(( $(date +%s) - T0 ))s)"
