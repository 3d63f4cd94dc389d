#!/usr/bin/env bash
# Session 6's third run (H200): P8 (T by doubling) against the recurrence, path alone in a
# graph on the dense benchmark cases (hh_bench.py panels), then validate.sh.
# Usage there:  ADAPTQR_COMMIT=<sha> bash bench/devscripts/next_p8.sh
export PYTHONUNBUFFERED=1 OUT=${OUT:-/tmp/out}
mkdir -p "$OUT/p8"
python3 -m pip install -q --no-deps --no-build-isolation -e . >/dev/null 2>&1
OUT="$OUT/p8" timeout 140 python3 bench/devscripts/hh_bench.py --sections panels --panels-dense \
  --panels-variants base,t_steps --budget 120 2>&1 | tee "$OUT/p8_log.txt" | grep -v "^check"
bash "$(dirname "$0")/validate.sh"
