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


def test_adopt_lists_a_packed_round_in_the_manifest(tmp_path):
    """Back on the CPU machine: the results of a pack land under reports/observed/LABEL, each in MANIFEST.json."""
    import json
    import tarfile

    from matrix import observed

    pack = tmp_path / "pack"
    (pack / "nvidia-h100" / "check" / "ort_x+1").mkdir(parents=True)
    (pack / "nvidia-h100" / "check" / "nodes").mkdir()
    (pack / "gpu.txt").write_text("NVIDIA H100 80GB HBM3, 9.0, 580.159.04, 81559 MiB\n")
    header = json.dumps({"schema": "qdq-matrix/session/2", "command": "pytest tests/cells --engine tensorrt"})
    (pack / "nvidia-h100" / "trt-8.6.0.jsonl").write_text(header + "\n")
    (pack / "nvidia-h100" / "log-8.6.0.txt").write_text("a log: not an observation\n")
    (pack / "nvidia-h100" / "check" / "ort_x+1" / "tensorrt-8.6.0.jsonl").write_text(header + "\n")
    (pack / "nvidia-h100" / "check" / "nodes" / "ort_x.json").write_text("{}\n")
    tgz = tmp_path / "results-nvidia-h100.tgz"
    with tarfile.open(tgz, "w:gz") as tar:
        tar.add(pack, arcname=".")
    dest = tmp_path / "observed"
    done = subprocess.run(["bash", str(ROOT / "tools" / "gpu-round.sh"), "adopt", "nvidia-h100", str(tgz)],
                          capture_output=True, text=True, timeout=120,
                          env={"WORK": str(tmp_path / "work"), "OBSERVED": str(dest), "PYTHON": sys.executable,
                               "PATH": "/usr/bin:/bin"})
    assert done.returncode == 0, done.stdout + done.stderr
    entries = observed.load(dest).entries
    assert sorted(entries) == ["nvidia-h100/check/nodes/ort_x.json", "nvidia-h100/check/tensorrt-8.6.0.jsonl",
                               "nvidia-h100/trt-8.6.0.jsonl"]
    assert entries["nvidia-h100/trt-8.6.0.jsonl"].machine.startswith("NVIDIA H100 80GB HBM3, 9.0, 580.159.04")
    assert entries["nvidia-h100/trt-8.6.0.jsonl"].command.startswith("tools/gpu-round.sh observe nvidia-h100")
    assert entries["nvidia-h100/check/tensorrt-8.6.0.jsonl"].command.startswith("tools/gpu-round.sh check")
    assert observed.verify(observed.load(dest)) == [] and not (tmp_path / "work").exists()
