#!/usr/bin/env bash
# The Q-formation, QR, wide and SOAP measurements (issues 25, 26, 28) in one device call:
#   householder_product and qr against torch's own on the 12 cases and the optimizer shapes,
#   geqrf on the wide shapes, then (with pytorch-optimizer's wheel in .whl, carried) the
#   SOAP examples. torch.linalg.qr and orgqr loop on the host: the first runs of a machine
#   measure their baselines (slow), later ones read bench/baseline_cache.
#   With COMPILE=1 first: the 12 cases eager and inside torch.compile (default and
#   reduce-overhead modes) in one bench (issue 26: within 5 %), and nothing else.
# Usage there: [COMPILE=1] ADAPTQR_COMMIT=<sha> bash bench/devscripts/ops_bench.sh [BUDGET]
# Here first: echo /.whl/ >> .git/info/exclude; python3 -m pip download --no-deps -d .whl pytorch-optimizer==4.1.0
source "$(dirname "$0")/_preamble.sh"
budget=${1:-0.8}
if [ "${COMPILE:-0}" = 1 ]; then
  mkdir -p "$OUT/compile"
  timeout 500 python3 -m adaptqr bench --compile default --compile reduce-overhead --budget "$budget" \
    --out "$OUT/compile" | tail -n 8
  rm -f "$OUT"/*/*.csv "$OUT"/*/*.png
  echo "== done  (t=$(( $(date +%s) - T0 ))s)"
  exit 0
fi
for op in householder_product qr; do
  mkdir -p "$OUT/$op"
  timeout 200 python3 -m adaptqr bench --op "$op" --cases bench+optimizer --budget "$budget" --out "$OUT/$op" | tail -n 20
  echo "== $op  (t=$(( $(date +%s) - T0 ))s)"
  # torch's orgqr and linalg.qr loops are slow to measure: bring the cache back each time
  mkdir -p "$OUT/baseline_cache" && cp bench/baseline_cache/*.json "$OUT/baseline_cache/"
done
mkdir -p "$OUT/wide"
timeout 100 python3 -m adaptqr bench --cases wide --budget "$budget" --out "$OUT/wide" | tail -n 6
if ls .whl/pytorch_optimizer-*.whl >/dev/null 2>&1; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl \
    && export PYTHONPATH=/tmp/site
  timeout 150 python3 examples/soap_refresh.py --json "$OUT/soap_refresh.json" | tail -n 12
  timeout 90 python3 examples/soap_step.py --steps 21 | tail -n 12
fi
rm -f "$OUT"/*/*.csv "$OUT"/*/*.png
echo "== done  (t=$(( $(date +%s) - T0 ))s)"
