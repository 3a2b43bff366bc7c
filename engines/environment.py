"""Is the engine still the one this run probed? A cell whose engine was removed or reinstalled under it is not a
verdict (issue 26.3: a second `nox -s openvino(...)` once rebuilt the environment under a running one, and 137
cells said "fail · new failure")."""

from __future__ import annotations

import importlib.util
import os


def installation(module: str) -> str:
    """Which install of a module this is: its file and that file's identity (device, inode, modification time);
    "" where the module is not found."""
    try:
        spec = importlib.util.find_spec(module)
    except (ImportError, ValueError):
        return ""
    origin = getattr(spec, "origin", None) if spec is not None else None
    if not origin or not os.path.isabs(origin):
        return ""
    try:
        st = os.stat(origin)
    except OSError:
        return ""
    return f"{origin} dev {st.st_dev} inode {st.st_ino} mtime {st.st_mtime_ns}"


def broken(module: str, probed: str) -> str:
    """Why the environment no longer holds the engine the run probed, or "" where it still does."""
    if not probed:
        return ""
    now = installation(module)
    if now == probed:
        return ""
    if not now:
        return f"environment broken: {module} was removed from this environment while the run used it"
    return f"environment broken: {module} was reinstalled under the running cells (its files changed after the probe)"
