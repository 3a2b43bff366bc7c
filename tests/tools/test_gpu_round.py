"""tools/gpu-round.sh's bench step and tools/trt-bare.py refuse bad input before touching a GPU (none here)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_bench_names_a_missing_bundle(tmp_path):
    done = subprocess.run(["bash", str(ROOT / "tools" / "gpu-round.sh"), "bench", "8.6.0", "no_such_model"],
                          capture_output=True, text=True, env={"WORK": str(tmp_path), "PATH": "/usr/bin:/bin"},
                          timeout=60)
    assert done.returncode == 2 and "no bundle" in done.stderr and "no_such_model" in done.stderr


def test_bench_needs_a_version_and_a_model(tmp_path):
    done = subprocess.run(["bash", str(ROOT / "tools" / "gpu-round.sh"), "bench"], capture_output=True, text=True,
                          env={"WORK": str(tmp_path), "PATH": "/usr/bin:/bin"}, timeout=60)
    assert done.returncode != 0 and "bench needs a TensorRT version" in done.stderr


def test_bare_engine_wants_a_bundle_folder(tmp_path):
    for args in ([], [str(tmp_path)], [str(tmp_path), str(tmp_path)]):
        done = subprocess.run([sys.executable, str(ROOT / "tools" / "trt-bare.py"), *args], capture_output=True,
                              text=True, timeout=60)
        assert done.returncode == 2 and "usage: trt-bare.py BUNDLE_DIR" in done.stderr
