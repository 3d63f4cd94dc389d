#!/usr/bin/env bash
# Session 9, issue 9 (EXPERIMENTS.md C10): a warp-synchronous CUDA C leaf against the Triton
# leaf (prototype).
# Usage there:  ADAPTQR_COMMIT=<sha> bash bench/devscripts/next_s9f.sh
source "$(dirname "$0")/_preamble.sh"
timeout 150 python3 bench/devscripts/warp_leaf.py
echo "== done  (t=$(( $(date +%s) - T0 ))s)"
