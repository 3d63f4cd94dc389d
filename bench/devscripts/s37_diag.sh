#!/usr/bin/env bash
# Session 37's diagnosis: the host time of householder_product at 20x32 beside geqrf's, the
# two ops alternated on 20x32 in separate processes, and 640x512's timelines (dense cond 2,
# rankdef, clustered) replayed as the bench times them.
source "$(dirname "$0")/_preamble.sh"
timeout 60 python3 bench/devscripts/hp_host.py --shape 20x32 > "$OUT/hp_host.txt" 2>&1
echo "hp_host: exit $?  (t=$(( $(date +%s) - T0 ))s)"
for i in 1 2; do for op in geqrf householder_product; do
  timeout 40 python3 -m adaptqr bench --op $op --no-baseline --budget 0.5 --out "$OUT/b20" \
    --cases bench/devscripts/cases_20x32.json 2>&1 | grep -E "geomean|FAIL|rror" | sed "s/^/$op $i: /"
done; done
for c in "dense --cond 2" "rankdef --cond 0" "clustered --cond 0"; do
  # shellcheck disable=SC2086
  timeout 90 python3 bench/devscripts/trace.py --shapes 640x512 --replay --no-path --case $c \
    > "$OUT/trace_${c%% *}.txt" 2>&1
  echo "trace $c: exit $?  (t=$(( $(date +%s) - T0 ))s)"
done
rm -rf "$OUT/b20" "$OUT/trace.json"
