"""Is the engine still the one this run probed? A cell whose engine was removed or reinstalled under it is not a
verdict: a second `nox -s openvino(...)` that rebuilds the environment under a running one would otherwise turn every
cell left into "fail · new failure"."""

from __future__ import annotations

import importlib.util
import os

BROKEN = "environment broken"  # how every reason below starts: such a cell is never reused


def installation(module: str) -> str:
    """Which install of a module this is: its file and that file's identity (device, inode, modification time);
    "" where the module is not found."""
    try:
        spec = importlib.util.find_spec(module)
    except (ImportError, ValueError):
        return ""
    origin = getattr(spec, "origin", None) if spec is not None else None
    return identity(origin or "")


def identity(origin: str) -> str:
    """A module file's identity (device, inode, modification time), or "" where there is none: what installation()
    says of a module that another interpreter imports from that file (a TensorRT worker's)."""
    if not origin or not os.path.isabs(origin):
        return ""
    try:
        st = os.stat(origin)
    except OSError:
        return ""
    return f"{origin} dev {st.st_dev} inode {st.st_ino} mtime {st.st_mtime_ns}"


def broken(module: str, probed: str, origin: str = "") -> str:
    """Why the environment no longer holds the engine the run probed, or "" where it still does; `origin`: the
    module's file, where the module is imported by another interpreter."""
    if not probed:
        return ""
    now = identity(origin) if origin else installation(module)
    if now == probed:
        return ""
    if not now:
        return f"{BROKEN}: {module} was removed from this environment while the run used it"
    return f"{BROKEN}: {module} was reinstalled under the running cells (its files changed after the probe)"
