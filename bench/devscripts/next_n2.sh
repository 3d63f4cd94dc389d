#!/usr/bin/env bash
# Prepared in session 6 for the next (H200): EXPERIMENTS.md N2, what FP16 (and one-pass TF32)
# trailing products gain on every dense benchmark case, path alone in a graph, with
# accuracy (hh_bench.py panels: base, prec_tf32, prec_fp16), then the trailing kernels'
# share (parts). Usage there:  ADAPTQR_COMMIT=<sha> bash bench/devscripts/next_n2.sh
source "$(dirname "$0")/_preamble.sh"
timeout 400 python3 bench/devscripts/hh_bench.py --sections panels,parts --panels-dense \
  --panels-variants base,prec_tf32,prec_fp16 --budget 380 | grep -v "^check"
echo "== done  (t=$(( $(date +%s) - T0 ))s)"
