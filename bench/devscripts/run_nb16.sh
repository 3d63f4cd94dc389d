#!/usr/bin/env bash
# One device call for EXPERIMENTS.md H7 / S2 (H200):
#   1. nb 16 against nb 32 (register panel as in H4) on the benchmark cases with n <= 512
#   2. the row-split knobs on 8x2048 / 2x4096 (SPLIT_MIN_ROWS x TRAILING_SPLIT_PROGRAMS)
#   3. adaptqr bench on the launch-bound cases, graphs on and off (issue 7)
# Usage there:  ADAPTQR_COMMIT=<sha> bash bench/devscripts/run_nb16.sh   (files under $OUT)
set -u
export PYTHONUNBUFFERED=1
OUT=${OUT:-/tmp/out}
mkdir -p "$OUT/a" "$OUT/s" "$OUT/small"
exec > >(tee -a "$OUT/log.txt") 2>&1
T0=$(date +%s)
python3 -m pip install -q --no-deps --no-build-isolation -e . >/dev/null 2>&1 || echo "pip install -e failed"
python3 -c "import adaptqr.paths.householder, torch, triton; print('torch', torch.__version__, 'triton', triton.__version__, torch.cuda.get_device_name())" || exit 1
echo "== 1. nb 16 / 32  (t=$(( $(date +%s) - T0 ))s)"
OUT="$OUT/a" timeout 130 python3 bench/devscripts/hh_bench.py --sections panels --panels-max-n 512 --budget 110
echo "== 2. split knobs  (t=$(( $(date +%s) - T0 ))s)"
OUT="$OUT/s" timeout 100 python3 bench/devscripts/hh_bench.py --sections split --budget 85
echo "== 3. graphs on/off  (t=$(( $(date +%s) - T0 ))s)"
timeout 45 python3 -m adaptqr bench --budget 1.5 --cases bench/devscripts/cases_small.json --env nographs:ADAPTQR_GRAPHS=0 --out "$OUT/small"
rm -f "$OUT"/*/*.csv "$OUT"/*/*.png
echo "== done  (t=$(( $(date +%s) - T0 ))s)"
