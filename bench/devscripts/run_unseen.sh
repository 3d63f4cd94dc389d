#!/usr/bin/env bash
# Issue 7 on inputs not used before (other seeds and sizes), graphs on and off; what building
# T costs in the panel kernels (micro.py tbuild). Usage there: ADAPTQR_COMMIT=<sha> bash bench/devscripts/run_unseen.sh
set -u
export PYTHONUNBUFFERED=1
OUT=${OUT:-/tmp/out}
mkdir -p "$OUT/unseen"
exec > >(tee -a "$OUT/log.txt") 2>&1
T0=$(date +%s)
python3 -m pip install -q --no-deps --no-build-isolation -e . >/dev/null 2>&1 || echo "pip install -e failed"
timeout 120 python3 -m adaptqr bench --budget 1.5 --cases bench/devscripts/cases_unseen_small.json --env nographs:ADAPTQR_GRAPHS=0 --out "$OUT/unseen" | tail -n 18
rm -f "$OUT"/*/*.csv "$OUT"/*/*.png
echo "== tbuild  (t=$(( $(date +%s) - T0 ))s)"
timeout 60 python3 bench/devscripts/micro.py --sections tbuild
echo "== done  (t=$(( $(date +%s) - T0 ))s)"
