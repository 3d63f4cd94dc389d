#!/usr/bin/env bash
# Issue 7 on inputs not used before (other seeds and sizes), graphs on and off; what building
# T costs in the panel kernels (micro.py tbuild). Usage there: ADAPTQR_COMMIT=<sha> bash bench/devscripts/run_unseen.sh
source "$(dirname "$0")/_preamble.sh"
mkdir -p "$OUT/unseen"
timeout 120 python3 -m adaptqr bench --budget 1.5 --cases bench/devscripts/cases_unseen_small.json --env nographs:ADAPTQR_GRAPHS=0 --out "$OUT/unseen" | tail -n 18
rm -f "$OUT"/*/*.csv "$OUT"/*/*.png
echo "== tbuild  (t=$(( $(date +%s) - T0 ))s)"
timeout 60 python3 bench/devscripts/micro.py --sections tbuild
echo "== done  (t=$(( $(date +%s) - T0 ))s)"
