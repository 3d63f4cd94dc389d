#!/usr/bin/env bash
# Session 9, issue 9 (EXPERIMENTS.md C11): the parts of a Triton Cholesky leaf.
# Usage there:  ADAPTQR_COMMIT=<sha> bash bench/devscripts/next_s9g.sh
source "$(dirname "$0")/_preamble.sh"
timeout 100 python3 bench/devscripts/leaf_parts.py
echo "== done  (t=$(( $(date +%s) - T0 ))s)"
