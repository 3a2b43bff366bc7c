#!/usr/bin/env bash
# Runs the whole catalogue on TensorRT interpreters in existing-interpreter mode, side by side, and
# writes one observed JSONL (and a log) per version:
#
#   tools/gpu-observe.sh OUT_DIR PYTHON [PYTHON ...]
#
# Each PYTHON is an interpreter that already has TensorRT: bin/python-trt-VERSION from
# tools/gpu-payload's remote-setup.sh, an NGC container's python, or any other. The controller is
# CONTROLLER (default: bin/python-controller beside the first PYTHON if there is one, else python3);
# it needs pytest, pytest-xdist, pytest-timeout, numpy and packaging. Bundles must already be in
# .bundles/ (python -m generators write, or carried here).
# TACTICS: "default" (TensorRT's default tactic sources, real cuBLAS/cuDNN; writes trt-VERSION.jsonl)
# or "tensorrt-only" (writes trt-VERSION-tensorrt-only.jsonl). WORKERS (default 4) cells at a time per
# version; LIMIT seconds per version (default 540).
set -uo pipefail
(($# >= 2)) || { sed -n '2,14p' "$0"; exit 2; }
out=$1; shift
tactics=${TACTICS:-default}
case $tactics in default) suffix="" ;; tensorrt-only) suffix="-tensorrt-only" ;;
  *) echo "gpu-observe: TACTICS must be default or tensorrt-only, not $tactics" >&2; exit 2 ;; esac
controller=${CONTROLLER:-}
if [[ -z $controller ]]; then
  beside=$(dirname "$1")/python-controller
  if [[ -x $beside ]]; then controller=$beside; else controller=python3; fi
fi
mkdir -p "$out"
nvidia-smi --query-gpu=name,compute_cap,driver_version --format=csv,noheader || true
echo "controller: $controller; tactics: $tactics"
for py in "$@"; do
  v=$("$py" -c 'import tensorrt; print(tensorrt.__version__)' 2>/dev/null) || { echo "no tensorrt in $py"; continue; }
  results=$out/trt-$v$suffix.jsonl
  # A results file resumes its own session; never append default-tactics cells to a stub-cuDNN file.
  if [[ -s $results ]] && head -n 1 "$results" | grep -q '"cudnn": "stub' && [[ $tactics == default ]]; then
    echo "gpu-observe: $results holds a stub-cuDNN session; move it aside first:" \
         "git mv $results ${results%.jsonl}-tensorrt-only.jsonl" >&2
    continue
  fi
  echo "== TensorRT $v with $py: $("$py" "$(dirname "$0")/../engines/tensorrt/worker.py" --probe 2>/dev/null |
        "$controller" -c 'import json, sys; p = json.loads(sys.stdin.read().splitlines()[-1]); print("cuDNN", p.get("cudnn"), "| cuBLAS", p.get("cublas"))' 2>/dev/null)"
  ( timeout "${LIMIT:-540}" "$controller" -m engines.run --engine tensorrt --trt-python="$py" --engine-version "$v" \
      --trt-tactics "$tactics" --results "$results" -n "${WORKERS:-4}" -- --timeout 300 -p no:benchmark \
      >"$out/log-$v$suffix.txt" 2>&1
    echo "== TensorRT $v: engines.run exit $?" >>"$out/log-$v$suffix.txt" ) &
done
wait
tail -n 3 "$out"/log-*.txt
