#!/usr/bin/env bash
# P3 (EXPERIMENTS.md), one device call (H200): the split panel's top rows read from program 0
# and T's partials summed four programs a load, against the kernel before (ab_old/panel.py,
# an untracked copy carried to the device), path alone in a graph with accuracy; then the
# split-panel GPU tests and the host profile of one eager 2x4096 call.
# Usage there:  ADAPTQR_COMMIT=<sha> bash bench/devscripts/next_p3.sh   (files under $OUT)
source "$(dirname "$0")/_preamble.sh"
run() {  # $1: label
  for n in 4096 2048; do
    mkdir -p "$OUT/$1_n$n"
    OUT="$OUT/$1_n$n" timeout 100 python3 bench/devscripts/hh_bench.py --sections split_panels --split-n $n --split-variants base --budget 90
  done
}
echo "== new"; run new
if [ -f ab_old/panel.py ]; then
  cp paths/kernels/panel.py /tmp/new_panel.py; cp ab_old/panel.py paths/kernels/panel.py
  echo "== old  (t=$(( $(date +%s) - T0 ))s)"; run old
  cp /tmp/new_panel.py paths/kernels/panel.py
fi
echo "== GPU tests  (t=$(( $(date +%s) - T0 ))s)"
timeout 150 python3 -m pytest -q -m gpu tests/gpu/test_householder_gpu.py -k "split_pairs or scaled or zero_and_nan or n_active or qr_v2" -p no:cacheprovider -rfE > "$OUT/gpu_tests.txt" 2>&1
echo "exit $?"; tail -n 6 "$OUT/gpu_tests.txt"
echo "== host profile  (t=$(( $(date +%s) - T0 ))s)"
timeout 60 python3 bench/devscripts/trace.py --shapes 2x4096 --cprofile 2>&1 | grep -v Warn
echo "== done  (t=$(( $(date +%s) - T0 ))s)"
