"""Polygraphy data loader: this bug bundle's inputs.npz (polygraphy run ... --data-loader-script data_loader.py)."""

import os

import numpy as np


def load_data():
    """One feed dict: every array of inputs.npz by input name."""
    with np.load(os.path.join(os.path.dirname(os.path.abspath(__file__)), "inputs.npz")) as f:
        yield {name: f[name] for name in f.files}
