"""tools/gpu-payload's arguments and the launchers that tools/gpu-remote-setup.sh writes (no download, no GPU)."""

from __future__ import annotations

import os
import stat
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PAYLOAD = ROOT / "tools" / "gpu-payload"
SETUP = ROOT / "tools" / "gpu-remote-setup.sh"


def payload(*args: str, tmp_path: Path) -> subprocess.CompletedProcess:
    env = dict(os.environ, XDG_CACHE_HOME=str(tmp_path / "cache"))
    return subprocess.run(["bash", str(PAYLOAD), *args], capture_output=True, text=True, env=env, cwd=tmp_path,
                          timeout=60)


@pytest.mark.parametrize(
    "args, message",
    [
        (["--part-mb", "0"], "--part-mb must be a positive whole number"),
        (["--part-mb", "55M"], "--part-mb must be a positive whole number"),
        (["--part-mb"], "--part-mb needs a number"),
        (["--trt", "8.6.1"], "TensorRT 8.6.1 is not one PyPI ships whole"),
        (["--trt", "10.8.0.43"], "choose from 8.5.1.7 8.5.2.2 8.5.3.1 8.6.0"),
        (["--level", "30"], "--level must be 1..19"),
        (["--parts", "3"], "unknown argument --parts"),
    ],
)
def test_bad_arguments_stop_before_any_download(tmp_path, args, message):
    done = payload("--out", str(tmp_path / "out"), *args, tmp_path=tmp_path)
    assert done.returncode == 2 and message in done.stderr
    assert not (tmp_path / "cache").exists() and not (tmp_path / "out").exists()


def test_dry_run_shows_the_pins_each_version_gets(tmp_path):
    done = payload("--dry-run", tmp_path=tmp_path)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert "TensorRT 8.5.1.7 8.5.2.2 8.5.3.1 8.6.0; parts of 48 MiB in .gpu" in lines[0]
    by_version = {line.split()[0]: line for line in lines[1:]}
    for v in ("8.5.1.7", "8.5.2.2", "8.5.3.1"):  # CUDA 11 builds: cuBLAS 11, cuDNN 8.6 for CUDA 11
        assert "nvidia-cublas-cu11==11.11.3.6 nvidia-cudnn-cu11==8.6.0.163" in by_version[f"tensorrt=={v}"]
    assert "nvidia-cublas-cu12==12.0.2.224 nvidia-cudnn-cu12==8.9.0.131" in by_version["tensorrt==8.6.0"]
    assert not (tmp_path / "cache").exists()


def test_dry_run_sorts_and_dedupes_versions(tmp_path):
    done = payload("--dry-run", "--trt", "8.6.0", "--trt", "8.5.3.1", "--trt", "8.6.0", "--part-mb", "40",
                   tmp_path=tmp_path)
    assert done.returncode == 0 and "TensorRT 8.5.3.1 8.6.0; parts of 40 MiB" in done.stdout


@pytest.fixture
def launcher(tmp_path):
    """bin/python-trt-8.6.0 as remote-setup writes it, over a stand-in python3.9 that prints its environment."""
    fake = tmp_path / "py39" / "usr" / "bin" / "python3.9"
    fake.parent.mkdir(parents=True)
    fake.write_text('#!/bin/sh\n'
                    'printf "%s\\n" "$PYTHONHOME" "$LD_LIBRARY_PATH" "$PYTHONPATH" "$QDQ_GPU_PAYLOAD" "$@"\n')
    fake.chmod(fake.stat().st_mode | stat.S_IEXEC)
    subprocess.run(["bash", str(SETUP), "--launcher", "8.6.0", "cu12"], cwd=tmp_path, check=True, timeout=30)
    return tmp_path / "bin" / "python-trt-8.6.0"


def test_the_launcher_is_an_executable_script_naming_its_version(launcher):
    text = launcher.read_text()
    assert text.startswith("#!/usr/bin/env bash\n") and os.access(launcher, os.X_OK)
    assert "TensorRT 8.6.0 with real cuBLAS/cuDNN/cudart (cu12)" in text


def test_the_launcher_puts_real_cuda_libraries_and_its_tensorrt_first(launcher, tmp_path):
    env = dict(os.environ, LD_LIBRARY_PATH="/usr/local/lib", PYTHONPATH="/mine")
    out = subprocess.run([str(launcher), "-c", "print(1)"], capture_output=True, text=True, env=env,
                         check=True, timeout=30).stdout.splitlines()
    home, ld, pypath, manifest, *args = out
    assert home == f"{tmp_path}/py39/usr"
    nv = f"{tmp_path}/cuda-cu12/nvidia"
    assert ld.split(":")[2:] == [f"{nv}/cudnn/lib", f"{nv}/cublas/lib", f"{nv}/cuda_runtime/lib", "/usr/local/lib"]
    assert "stub" not in ld
    assert pypath.split(":") == [f"{tmp_path}/trt-8.6.0", f"{tmp_path}/site-common", "/mine"]
    assert manifest == f"{tmp_path}/manifest.json"
    assert args == ["-c", "print(1)"]


def test_the_launcher_adds_no_empty_path_entry(launcher):
    env = {k: v for k, v in os.environ.items() if k not in ("LD_LIBRARY_PATH", "PYTHONPATH")}
    home, ld, pypath, *_ = subprocess.run([str(launcher)], capture_output=True, text=True, env=env, check=True,
                                          timeout=30).stdout.splitlines()
    assert "" not in ld.split(":") and "" not in pypath.split(":")
