#!/usr/bin/env bash
# Runs the whole catalogue on TensorRT interpreters in existing-interpreter mode, side by side, and
# writes one observed JSONL (and a log) per version:
#
#   tools/gpu-observe.sh OUT_DIR PYTHON [PYTHON ...]
#
# Each PYTHON is an interpreter that already has TensorRT (an NGC container's python, an
# air-gapped box's, or bin/python-trt-VERSION from ../shared/gpu-runner's remote-setup.sh). The
# controller is this machine's python3: it needs pytest, pytest-xdist, pytest-timeout, numpy and
# packaging. Bundles must already be in .bundles/ (python -m generators write, or carried here).
# WORKERS (default 4) cells at a time per version; LIMIT seconds per version (default 540).
set -uo pipefail
out=$1; shift
mkdir -p "$out"
nvidia-smi --query-gpu=name,compute_cap,driver_version --format=csv,noheader || true
for py in "$@"; do
  v=$("$py" -c 'import tensorrt; print(tensorrt.__version__)' 2>/dev/null) || { echo "no tensorrt in $py"; continue; }
  echo "== TensorRT $v with $py"
  ( timeout "${LIMIT:-540}" python3 -m pytest tests/cells --engine tensorrt --trt-python "$py" --engine-version "$v" \
      --results "$out/trt-$v.jsonl" --results-source observed -n "${WORKERS:-4}" --timeout 300 \
      -p no:cacheprovider -p no:benchmark -q -rN >"$out/log-$v.txt" 2>&1
    echo "== TensorRT $v: pytest exit $?" >>"$out/log-$v.txt" ) &
done
wait
tail -n 3 "$out"/log-*.txt
