"""Check a user's own quantized ONNX model through the matrix pipeline: bundle, cells, per-node report.

    python -m check model.onnx [--inputs x.npz] [--shape input:1x3x224x224] [--engine onnxruntime ...]

Dependency direction: check -> cases, generators, engines, matrix. Bundles are made on a machine
with onnx and onnxruntime (`check.bundle`); cells run through the existing pytest plugin.
"""

from __future__ import annotations


class CheckError(Exception):
    """Bad input from the user: one clear line, exit status 2."""


class HarnessFailure(Exception):
    """The check itself failed on a model (a bug of ours, not the model's): the traceback where it happened, as text
    (it crosses from check.isolated's child process)."""
