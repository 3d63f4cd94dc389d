#!/usr/bin/env bash
# Session 9, issue 9 (EXPERIMENTS.md C6): the CholeskyQR path alone against the Householder
# path alone, stage breakdown, accuracy, injected fallback.
# Usage there:  ADAPTQR_COMMIT=<sha> bash bench/devscripts/next_s9b.sh [cases...]
source "$(dirname "$0")/_preamble.sh"
echo "== cholqr_time  (t=$(( $(date +%s) - T0 ))s)"
timeout 420 python3 bench/devscripts/cholqr_time.py "$@"
echo "== done  (t=$(( $(date +%s) - T0 ))s)"
