#!/usr/bin/env bash
# One step of a GPU round, each a call of its own (a lent machine gives each command up to 10 minutes and
# keeps its files between calls while it is held). Every step writes into WORK (default /root/qdq-gpu) and
# resumes what an earlier, interrupted call of it left; `pack` copies the results to OUT.
#
#   tools/gpu-round.sh unpack PARTS_DIR           # payload parts -> WORK/payload, launchers in WORK/payload/bin
#   tools/gpu-round.sh sweep VERSION [RUNS...]    # wall time against workers, with and without the timing cache
#   tools/gpu-round.sh observe LABEL [VERSIONS]   # the catalogue on each version side by side, timing cache on;
#                                                  # one version per GPU on a host with several (GPUS=N: the first N)
#   TACTICS=tensorrt-only tools/gpu-round.sh observe LABEL [VERSIONS]
#   tools/gpu-round.sh check LABEL                # user-model bundles (.bundles-user) on the two newest 8.x pins
#   tools/gpu-round.sh bench VERSION MODEL [N]    # `check` on one user bundle against the bare engine
#                                                  # (tools/trt-bare.py), N times each, fresh processes
#   tools/gpu-round.sh rtx LABEL WHEELS VERSION   # TensorRT-RTX from carried wheels (WHEELS/VERSION-a, -b): its
#                                                  # cells with this GPU (python3 is the controller and the worker)
#   tools/gpu-round.sh pack LABEL OUT             # WORK/obs -> OUT/results-LABEL.tgz
#   tools/gpu-round.sh adopt LABEL TGZ            # back on the CPU machine, in the checkout to commit from: the
#                                                  # results files of TGZ into reports/observed/LABEL/, each listed
#                                                  # in its MANIFEST.json (matrix observe) with machine and command
#
# A sweep run is "w<workers>-<cache>" with cache "off", "cold" (the cache file removed first) or "warm"
# (the file the cold run left); default runs: w4-off w4-cold w1-warm w2-warm w4-warm w8-warm w14-warm
# w14-off w1-off. Each run writes WORK/obs/sweep/<VERSION>-<run>.jsonl and a line to sweep.tsv: run,
# workers, cache, wall seconds, cells. Bundles must be in .bundles/ (carried with the call that unpacks).
set -uo pipefail
step=${1:-}; shift || true
repo=$(cd "$(dirname "$0")/.." && pwd)
work=${WORK:-/root/qdq-gpu}
obs=$work/obs
bin=$work/payload/bin
[[ $step == adopt ]] || mkdir -p "$obs"
say() { echo "[$(date +%H:%M:%S)] $*"; }
pins() { (cd "$repo" && python3 -m engines.pins "$@"); }  # the pin table: the engine descriptors (core/engines.py)
cells() {  # VERSION RESULTS WORKERS [engines.run flags...]: the catalogue on one version, into one results file
  local v=$1 results=$2 workers=$3; shift 3
  (cd "$repo" && timeout "${LIMIT:-570}" "$bin/python-controller" -m engines.run --engine tensorrt \
     --trt-python="$bin/python-trt-$v" --engine-version "$v" --results "$results" -n "$workers" "$@" \
     -- --timeout 300 -p no:benchmark)
}

case $step in
unpack)
  parts=${1:?unpack needs the folder of payload parts}
  mkdir -p "$work/payload"
  if [[ -x $bin/python-controller ]]; then say "payload already unpacked"; exit 0; fi
  cp "$parts"/*/payload.tar.* "$work/payload/" 2>/dev/null || cp "$parts"/payload.tar.* "$work/payload/"
  (cd "$work/payload" && cat payload.tar.* | tar x && rm -f payload.tar.* && bash payload/remote-setup.sh) \
    >"$obs/setup.log" 2>&1 || { say "payload set-up failed"; tail -20 "$obs/setup.log"; exit 1; }
  nvidia-smi --query-gpu=name,compute_cap,driver_version,memory.total --format=csv,noheader | tee "$obs/gpu.txt"
  say "unpacked: $(ls "$bin")"
  ;;
sweep)
  v=${1:?sweep needs a TensorRT version}; shift
  runs=("$@"); ((${#runs[@]})) || runs=(w4-off w4-cold w1-warm w2-warm w4-warm w8-warm w14-warm w14-off w1-off)
  mkdir -p "$obs/sweep"
  cache_dir=$obs/sweep/timing-cache
  for run in "${runs[@]}"; do
    results=$obs/sweep/$v-$run.jsonl
    grep -q "^$v	$run	" "$obs/sweep/sweep.tsv" 2>/dev/null && { say "sweep $run: done already"; continue; }
    workers=${run%%-*}; workers=${workers#w}; cache=${run#*-}
    args=()
    case $cache in
      off) args=(--no-timing-cache) ;;
      cold) rm -f "$cache_dir"/tensorrt-"$v"-*.cache ;;
      warm) ;;
          *) echo "gpu-round: a run is w<N>-off|cold|warm, not $run" >&2; exit 2 ;;
    esac
    [[ -n ${ONLY_CASES:-} ]] && for c in $ONLY_CASES; do args+=(--only-case "$c"); done
    rm -f "$results"
    say "sweep $v $run"
    start=$(date +%s%N)
    QDQ_TIMING_CACHE_DIR=$cache_dir cells "$v" "$results" "$workers" "${args[@]}" >"$obs/sweep/$v-$run.log" 2>&1
    rc=$?
    wall_ms=$(( ($(date +%s%N) - start) / 1000000 ))
    n=$(grep -c '"qdq-matrix/cell/' "$results" 2>/dev/null || echo 0)
    [[ $rc -le 1 ]] && printf '%s\t%s\t%s\t%s\t%d.%03d\t%s\n' "$v" "$run" "$workers" "$cache" $((wall_ms / 1000)) \
      $((wall_ms % 1000)) "$n" >>"$obs/sweep/sweep.tsv"
    say "sweep $v $run: exit $rc, $((wall_ms / 1000)) s, $n cells"
  done
  ;;
observe)
  label=${1:?observe needs a label (nvidia-h100, nvidia-h200)}; shift
  versions=("$@"); ((${#versions[@]})) || mapfile -t versions < <(pins trt)
  suffix=""; [[ ${TACTICS:-default} == tensorrt-only ]] && suffix=-tensorrt-only
  mkdir -p "$obs/$label"
  only=(); [[ -n ${ONLY_CASES:-} ]] && for c in $ONLY_CASES; do only+=(--only-case "$c"); done
  # One version per GPU where the host has several (GPUS=N uses the first N; GPUS=1 puts every version on GPU 0).
  gpus=${GPUS:-$(nvidia-smi -L 2>/dev/null | grep -c '^GPU ')}; ((gpus > 0)) || gpus=1
  start=$(date +%s%N); i=0
  for v in "${versions[@]}"; do
    gpu=$((i % gpus)); i=$((i + 1))
    ( CUDA_VISIBLE_DEVICES=$gpu QDQ_TRT_TACTICS=${TACTICS:-default} QDQ_TIMING_CACHE_DIR=${CACHE_DIR:-$obs/timing-cache} \
        cells "$v" "$obs/$label/trt-$v$suffix.jsonl" "${WORKERS:-4}" "${only[@]}" >"$obs/$label/log-$v$suffix.txt" 2>&1
      say "observe $label $v$suffix on GPU $gpu: exit $?" ) &
  done
  wait
  wall_ms=$(( ($(date +%s%N) - start) / 1000000 ))
  printf '%s\t%s\t%s\t%s\t%d.%03d\n' "$label" "${versions[*]}" "$gpus" "${WORKERS:-4}" $((wall_ms / 1000)) \
    $((wall_ms % 1000)) >>"$obs/observe-wall.tsv"
  say "observe $label: ${#versions[@]} versions on $gpus GPU(s), $((wall_ms / 1000)) s"
  tail -qn 1 "$obs/$label"/log-*"$suffix".txt
  ;;
check)
  label=${1:?check needs a label}
  mkdir -p "$obs/$label"
  interpreters=(); for v in $(pins trt | tail -n 2); do interpreters+=(--trt-python "$bin/python-trt-$v"); done
  (cd "$repo" && QDQ_TIMING_CACHE_DIR=$obs/timing-cache PYTHONPATH=$repo "$bin/python-controller" -m check \
      --from-bundles .bundles-user --engine tensorrt "${interpreters[@]}" --results "$obs/$label/check" \
      --reports "$obs/$label/check/nodes") >"$obs/$label/check.log" 2>&1
  say "check $label: exit $?"; tail -n 3 "$obs/$label/check.log"
  ;;
bench)
  v=${1:?bench needs a TensorRT version}; model=${2:?bench needs a bundle name under .bundles-user/user_model}
  n=${3:-3}; src=$repo/.bundles-user/user_model/$model
  if [[ ! -f $src/model.onnx ]]; then  # the model's name: its bundle is <name>-<10 hex digits of its id>
    found=("$src"-??????????); [[ -f ${found[0]}/model.onnx ]] && src=${found[0]} && model=${src##*/}
  fi
  [[ -f $src/model.onnx ]] || { echo "gpu-round: no bundle $src" >&2; exit 2; }
  dir=$obs/bench/$v-$model; rm -rf "$dir"; mkdir -p "$dir/one/user_model"; cp -r "$src" "$dir/one/user_model/"
  wall() {  # OUT ERR COMMAND...: "exit-status milliseconds", the command's output appended to OUT and ERR
    local o=$1 e=$2 s; shift 2; s=$(date +%s%N); "$@" >>"$o" 2>>"$e"; echo "$? $(( ($(date +%s%N) - s) / 1000000 ))"; }
  for i in $(seq "$n"); do  # each: a new process; check's timing cache cold (a new empty folder), then warm
    read -r rc ms < <(wall "$dir/bare.jsonl" "$dir/bare.log" "$bin/python-trt-$v" "$repo/tools/trt-bare.py" \
      "$dir/one/user_model/$model")
    printf '%s\t%s\tbare\t%s\t%s\t%s\n' "$v" "$model" "$i" "$rc" "$ms" | tee -a "$obs/bench/bench.tsv"
    for cache in cold warm; do
      [[ $cache == cold ]] && rm -rf "$dir/cache-$i"
      read -r rc ms < <(cd "$repo" && wall "$dir/check.log" "$dir/check.log" env QDQ_TIMING_CACHE_DIR="$dir/cache-$i" \
        PYTHONPATH="$repo" "$bin/python-controller" -m check --from-bundles "$dir/one" --engine tensorrt \
        --trt-python "$bin/python-trt-$v" --results "$dir/r-$i-$cache" --reports "$dir/rep-$i-$cache")
      printf '%s\t%s\tcheck-%s\t%s\t%s\t%s\n' "$v" "$model" "$cache" "$i" "$rc" "$ms" | tee -a "$obs/bench/bench.tsv"
    done
  done
  ;;
rtx)
  label=${1:?rtx needs a label}; wheels=${2:?rtx needs the wheel folder}; v=${3:?rtx needs a version}
  site=$work/rtx-$v/site
  if [[ ! -x $work/rtx-$v/python ]]; then
    mkdir -p "$work/rtx-$v/w"
    cp "$wheels/$v-a"/*.whl "$work/rtx-$v/w/"
    cat "$wheels/$v-a"/libs-*.part00 "$wheels/$v-b"/libs-*.part01 >"$work/rtx-$v/w/$(cat "$wheels/$v-a/LIBS_NAME")"
    python3 -m pip install -q --no-index --no-deps --target "$site" "$work/rtx-$v/w"/*.whl || exit 1
    printf '#!/usr/bin/env bash\nexport PYTHONPATH=%s${PYTHONPATH:+:$PYTHONPATH}\nexec python3 "$@"\n' "$site" \
      >"$work/rtx-$v/python"
    chmod +x "$work/rtx-$v/python"
  fi
  mkdir -p "$obs/$label"
  (cd "$repo" && timeout "${LIMIT:-570}" python3 -m engines.run --engine tensorrt-rtx \
      --trt-python="$work/rtx-$v/python" --engine-version "$v" --results "$obs/$label/rtx-$v.jsonl" \
      -n "${WORKERS:-8}" -- --timeout 300 -p no:benchmark) \
      >"$obs/$label/log-rtx-$v.txt" 2>&1
  say "rtx $label $v: exit $?"; tail -n 2 "$obs/$label/log-rtx-$v.txt"
  ;;
pack)
  label=${1:?pack needs a label}; out=${2:?pack needs OUT}
  nvidia-smi >"$obs/nvidia-smi.txt" 2>&1 || true
  nvidia-smi --query-gpu=name,compute_cap,driver_version,memory.total --format=csv,noheader >"$obs/gpu.txt" 2>/dev/null \
    || true
  tar czf "$out/results-$label.tgz" -C "$obs" --exclude='*.cache' --exclude='*.lock' .
  say "packed $out/results-$label.tgz ($(du -h "$out/results-$label.tgz" | cut -f1))"
  ;;
adopt)  # on the CPU machine: only the manifest makes a file observed (matrix/observed.py)
  label=${1:?adopt needs a label}; tgz=${2:?adopt needs the results-LABEL.tgz that pack wrote}
  [[ -f $tgz ]] || { echo "gpu-round: no such file $tgz" >&2; exit 2; }
  dest=${OBSERVED:-$repo/reports/observed}; tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
  tar xzf "$tgz" -C "$tmp" || { echo "gpu-round: $tgz is not a pack of this script" >&2; exit 2; }
  gpu=$(head -n 1 "$tmp/gpu.txt" 2>/dev/null); [[ -n $gpu ]] || { echo "gpu-round: $tgz holds no gpu.txt" >&2; exit 2; }
  machine="$gpu (nvidia-smi: name, compute capability, driver, memory); TensorRT from tools/gpu-payload, the cuDNN and cuBLAS of each version in its session headers"
  day=$(date -r "$tgz" +%F)
  list_as() {  # STEP FILE...: copy each file to the same place under dest/LABEL, then list them all as STEP made them
    local what=$1 files=(); shift
    for f in "$@"; do
      [[ -f $f ]] || continue
      rel=${f#"$tmp/$label/"}; [[ $rel == check/*/*.jsonl ]] && rel=check/${rel##*/}
      mkdir -p "$(dirname "$dest/$label/$rel")" && cp "$f" "$dest/$label/$rel" && files+=("$dest/$label/$rel")
    done
    ((${#files[@]})) || return 0
    PYTHONPATH=$repo "${PYTHON:-python3}" -m matrix observe "${files[@]}" --root "$dest" --machine "$machine" \
      --command "tools/gpu-round.sh $what $label (packed $day); each results file's pytest command is in its session headers"
  }
  shopt -s nullglob
  list_as observe "$tmp/$label"/trt-*.jsonl || exit 1
  list_as rtx "$tmp/$label"/rtx-*.jsonl || exit 1
  list_as check "$tmp/$label"/check/*/*.jsonl "$tmp/$label"/check/nodes/*.json || exit 1
  say "adopted into $dest/$label: commit the files and MANIFEST.json together"
  ;;
*) sed -n '2,20p' "$0"; exit 2 ;;
esac
