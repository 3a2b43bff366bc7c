#!/usr/bin/env bash
# Runs on the GPU machine (no root, no internet) in the folder that holds the unpacked payload/
# that tools/gpu-payload made. It unpacks a Python 3.9, the TensorRT versions and their real
# cuBLAS/cuDNN/cudart, and writes one launcher per version, bin/python-trt-VERSION.
#
#   bash payload/remote-setup.sh                      # everything
#   bash payload/remote-setup.sh --launcher V CUDA    # only bin/python-trt-V (for tests)
set -euo pipefail
root=$(pwd)
p=$root/payload
pylibs=$root/py39/usr/lib/x86_64-linux-gnu:$root/py39/lib/x86_64-linux-gnu

write_launcher() {  # VERSION CUDA: a Python 3.9 whose `import tensorrt` is that version
  local v=$1 c=$2 nv=$root/cuda-$2/nvidia
  mkdir -p "$root/bin"
  cat >"$root/bin/python-trt-$v" <<LAUNCH
#!/usr/bin/env bash
# TensorRT $v with real cuBLAS/cuDNN/cudart ($c) from the qdq-matrix GPU payload.
export PYTHONHOME=$root/py39/usr
export LD_LIBRARY_PATH=$pylibs:$nv/cudnn/lib:$nv/cublas/lib:$nv/cuda_runtime/lib\${LD_LIBRARY_PATH:+:\$LD_LIBRARY_PATH}
export PYTHONPATH=$root/trt-$v:$root/site-common\${PYTHONPATH:+:\$PYTHONPATH}
export QDQ_GPU_PAYLOAD=$root/manifest.json
exec $root/py39/usr/bin/python3.9 "\$@"
LAUNCH
  chmod +x "$root/bin/python-trt-$v"
}

write_controller() {  # bin/python-controller: the same Python 3.9 with pytest & co., no TensorRT, no CUDA libraries
  mkdir -p "$root/bin"
  cat >"$root/bin/python-controller" <<LAUNCH
#!/usr/bin/env bash
# The cell controller's Python 3.9 (pytest, pytest-xdist, pytest-timeout, numpy, onnx) from the qdq-matrix GPU payload.
export PYTHONHOME=$root/py39/usr
export LD_LIBRARY_PATH=$pylibs\${LD_LIBRARY_PATH:+:\$LD_LIBRARY_PATH}
export PYTHONPATH=$root/site-common\${PYTHONPATH:+:\$PYTHONPATH}
exec $root/py39/usr/bin/python3.9 "\$@"
LAUNCH
  chmod +x "$root/bin/python-controller"
}

if [[ ${1:-} == --launcher ]]; then
  write_launcher "$2" "$3"
  exit 0
fi

mkdir -p "$root/py39" "$root/site-common" "$root/boot"
for d in "$p"/debs/*.deb; do dpkg -x "$d" "$root/py39"; done
py39() { PYTHONHOME=$root/py39/usr LD_LIBRARY_PATH=$pylibs "$root/py39/usr/bin/python3.9" "$@"; }
for w in "$p"/boot/*.whl; do py39 -m zipfile -e "$w" "$root/boot"; done
# The store is zstd with a 2 GiB window: the zstd binary if there is one, else the zstandard wheel.
if command -v zstd >/dev/null; then
  zstd -q -d --long=31 -c "$p/store.tar.zst" | tar x -C "$root"
else
  PYTHONPATH=$root/boot py39 -c 'import sys, zstandard
zstandard.ZstdDecompressor(max_window_size=2**31).copy_stream(open(sys.argv[1], "rb"), sys.stdout.buffer)' \
    "$p/store.tar.zst" | tar x -C "$root"
fi
for w in "$p"/wheels/*.whl; do py39 -m zipfile -e "$w" "$root/site-common"; done
cp "$p/manifest.json" "$root/manifest.json"
write_controller
echo "remote-setup: $root/bin/python-controller -> $("$root/bin/python-controller" -c 'import pytest, xdist, pytest_timeout, numpy; print("pytest", pytest.__version__, "numpy", numpy.__version__)' 2>&1 | tail -n 1)"
for t in "$root"/trt-*/; do
  t=${t%/}; v=${t##*/trt-}; c=$(cat "$t/CUDA")
  ln -sfn "../cuda-$c/nvidia" "$t/nvidia"   # TensorRT's own RUNPATH ($ORIGIN/../nvidia/...) finds them too
  write_launcher "$v" "$c"
  echo "remote-setup: $root/bin/python-trt-$v -> $("$root/bin/python-trt-$v" -c 'import tensorrt, numpy; print("tensorrt", tensorrt.__version__, "numpy", numpy.__version__)' 2>&1 | tail -n 1)"
done
