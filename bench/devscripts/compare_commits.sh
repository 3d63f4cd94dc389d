#!/usr/bin/env bash
# The bench of another commit and of this working tree in one device call, on the same
# machine, one after the other. Here, before the call:
#   echo /.prev/ >> .git/info/exclude; rm -rf .prev; mkdir .prev
#   git archive REV | tar -x -C .prev; rm -rf .prev/bench/results
# then call the device with carry [".prev"] and, there:
#   PREV=REV CUR=<sha> bash bench/devscripts/compare_commits.sh [BUDGET]
# JSON under $OUT/prev and $OUT/cur (each with its commit); BUDGET: seconds a case (0.8).
source "$(dirname "$0")/_preamble.sh"
budget=${1:-0.8}
[ -d .prev ] || { echo "no .prev tree (see the header)"; exit 2; }
(cd .prev && python3 -m pip install -q --no-deps --no-build-isolation -e . >/dev/null 2>&1) || exit 1
# From inside .prev: run from the root, `python3 -m adaptqr` would import ./adaptqr, this tree's.
(cd .prev && ADAPTQR_COMMIT=${PREV:-prev} timeout 250 python3 -m adaptqr bench --budget "$budget" --out "$OUT/prev" | tail -n 16)
python3 -m pip install -q --no-deps --no-build-isolation -e . >/dev/null 2>&1 || exit 1
ADAPTQR_COMMIT=${CUR:-cur} timeout 250 python3 -m adaptqr bench --budget "$budget" --out "$OUT/cur" | tail -n 16
rm -f "$OUT"/*/*.csv "$OUT"/*/*.png
echo "== done  (t=$(( $(date +%s) - T0 ))s)"
