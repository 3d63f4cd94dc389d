#!/usr/bin/env bash
# Session 6's second run (H200): P5 / P6 / P7 (t_diag.py, log in $OUT/t_diag_log.txt), then
# validate.sh (which installs and logs to $OUT/log.txt itself).
# Usage there:  ADAPTQR_COMMIT=<sha> bash bench/devscripts/next_p5.sh
export PYTHONUNBUFFERED=1 OUT=${OUT:-/tmp/out}
mkdir -p "$OUT"
python3 -m pip install -q --no-deps --no-build-isolation -e . >/dev/null 2>&1
timeout 150 python3 bench/devscripts/t_diag.py 2>&1 | tee "$OUT/t_diag_log.txt"
bash "$(dirname "$0")/validate.sh"
