# Sourced by the device scripts here: strict variables, unbuffered Python, $OUT (what the
# device tool brings back), everything logged to $OUT/log.txt, T0 for elapsed times, and
# the editable install (nothing fetched; the machine's torch stays).
set -u
export PYTHONUNBUFFERED=1
OUT=${OUT:-/tmp/out}
mkdir -p "$OUT"
exec > >(tee -a "$OUT/log.txt") 2>&1
T0=$(date +%s)
python3 -m pip install -q --no-deps --no-build-isolation -e . >/dev/null 2>&1 \
  || echo "pip install -e failed (the checkout maps its own subpackages)"
