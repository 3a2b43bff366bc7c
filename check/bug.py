"""`python -m check --bug NAME`: bug bundles for the failing cells of a model you checked.

NAME is the model's .onnx file, its bundle id (user_model/net) or its name (net). The cells come from check's
results folder (--results, default results/check/), the bundle from its bundle folder (--out, default
.bundles-user/); each bug bundle (model, inputs, repro.py, ISSUE.md) goes to bug-bundles/ (matrix/bugbundle.py).
The same as `nox -s bugs -- --model NAME`.
"""

from __future__ import annotations

import argparse


def bug_bundles(args: argparse.Namespace) -> int:
    """Exit 0 when bug bundles were written (or nothing failed), 1 when one was refused, 2 for a name with no cells."""
    from matrix.__main__ import main as matrix_main

    return matrix_main(["bugs", "--model", args.bug, "--results", str(args.results), "--user-bundles", str(args.out)])
