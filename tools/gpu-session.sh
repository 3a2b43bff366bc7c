#!/usr/bin/env bash
# One whole GPU session on an air-gapped machine, after every payload part was copied to PAYLOAD:
# unpack, observe the catalogue on every TensorRT version side by side, check the user-model bundles
# on the two newest TensorRT 8.x pins (python -m engines.pins trt), reduce one failing model on the newest, and pack
# everything into OUT/results.tgz.
#
#   tools/gpu-session.sh PAYLOAD LABEL OUT [REDUCE_MODEL]
#
# LABEL names the observed folder (nvidia-h100, nvidia-h200). Bundles must be in .bundles/ (catalogue)
# and .bundles-user/ (python -m check MODELS --prepare-only --out .bundles-user). Progress goes to
# stdout; each step's log lands in the tarball, so a step that fails loses nothing of the others.
set -uo pipefail
(($# >= 3)) || { sed -n '2,11p' "$0"; exit 2; }
payload=$(cd "$1" && pwd) label=$2 out=$3 reduce_model=${4:-}
repo=$(cd "$(dirname "$0")/.." && pwd)
obs=/tmp/obs/$label
mkdir -p "$obs" "$out"
step() { echo "[$(date +%H:%M:%S)] $*"; }
mapfile -t newest < <(cd "$repo" && python3 -m engines.pins trt | tail -n 2)  # the pin table: core/engines.py

if [[ ! -x $payload/bin/python-controller ]]; then
  step "unpacking the payload in $payload"
  (cd "$payload" && cat payload.tar.* | tar x && bash payload/remote-setup.sh) >"$obs/setup.log" 2>&1 \
    || { step "payload set-up failed"; tail -20 "$obs/setup.log"; }
fi
pythons=("$payload"/bin/python-trt-*)
step "observing the catalogue on ${#pythons[@]} TensorRT versions"
(cd "$repo" && WORKERS=${WORKERS:-4} LIMIT=${LIMIT:-1500} tools/gpu-observe.sh "$obs" "${pythons[@]}") >"$obs/observe.log" 2>&1
step "catalogue done"; tail -n 8 "$obs/observe.log"

if [[ -d $repo/.bundles-user ]]; then
  step "checking user-model bundles on ${newest[*]}"
  interpreters=(); for v in "${newest[@]}"; do interpreters+=(--trt-python "$payload/bin/python-trt-$v"); done
  (cd "$repo" && PYTHONPATH=$repo "$payload/bin/python-controller" -m check --from-bundles .bundles-user \
      "${interpreters[@]}" --results "$obs/check-results" --reports "$obs/check-nodes") >"$obs/check.log" 2>&1
  step "check exit $?"; tail -n 5 "$obs/check.log"
fi

if [[ -n $reduce_model ]]; then
  step "reducing $reduce_model on ${newest[-1]}"
  (cd "$repo" && PYTHONPATH=$repo python3 -m check.reduce "$reduce_model" --engine tensorrt \
      --trt-python "$payload/bin/python-trt-${newest[-1]}" --out "$obs/reduce") >"$obs/reduce.log" 2>&1
  step "reduce exit $?"; tail -n 5 "$obs/reduce.log"
fi

nvidia-smi >"$obs/nvidia-smi.txt" 2>&1 || true
tar czf "$out/results-$label.tgz" -C /tmp/obs "$label"
step "packed $out/results-$label.tgz ($(du -h "$out/results-$label.tgz" | cut -f1))"
