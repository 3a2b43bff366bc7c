"""Paths and commands as results files and reports record them: relative to the repository, never a machine's own.

A path inside the repository is written relative to it (`.bundles-user`, `reports/observed/nvidia-h200/...`);
a path outside it keeps only its last two parts behind "…/" (`…/bin/python-trt-8.6.0`), which says what it was
without saying where it lay on whose machine.
"""

from __future__ import annotations

import functools
import os
import re
from pathlib import Path, PurePosixPath
from typing import Iterable, Optional, Union

REPO = Path(__file__).resolve().parent.parent
OUTSIDE = "…/"
# An absolute path inside a text: a "/" that starts a token (after a space, "=", a quote or a bracket) and
# names at least two levels ("/root/x", "/tmp/x"), or a Windows drive path.
ABSOLUTE = re.compile(r"""(?:(?<=^)|(?<=[\s='"(\[,:]))(?:/[^\s/'"=,;:)\]]+){2,}/?|[A-Za-z]:\\[^\s'"]+""")
# A machine's own path: an absolute path under a folder that holds users' and machines' files. (An ONNX node
# name such as "/layer1/conv/Conv" is absolute-looking too, which is why detection names the roots.)
MACHINE_ROOTS = ("root", "home", "tmp", "work", "usr", "opt", "var", "mnt", "srv", "data", "scratch", "Users",
                 "private", "nix", "media", "run")
MACHINE_PATH = re.compile(r"""(?:(?<=^)|(?<=[^\w.~…-]))/(?:%s)/[^\s'"<>]*|\b[A-Za-z]:\\[^\s'"<>]+"""
                          % "|".join(MACHINE_ROOTS))


def portable_path(path: Union[str, Path], repo: Optional[Path] = None) -> str:
    """One path as a record keeps it: repository-relative inside it, else "…/<parent>/<name>"."""
    text = str(path)
    if not os.path.isabs(text):
        return text
    base = os.path.realpath(repo or REPO)
    real = os.path.realpath(text)
    for candidate in (os.path.normpath(text), real):
        if candidate == base or candidate.startswith(base + os.sep):
            return os.path.relpath(candidate, base).replace(os.sep, "/")
    parts = PurePosixPath(text.replace("\\", "/")).parts[1:]
    return OUTSIDE + "/".join(parts[-2:]) if parts else OUTSIDE


def portable_command(argv: Iterable[str], repo: Optional[Path] = None) -> str:
    """A command line with every absolute path in it (a token, or the value of --flag=VALUE) made portable."""
    out = []
    for token in argv:
        flag, eq, value = token.partition("=")
        if eq and flag.startswith("-") and os.path.isabs(value):
            out.append(f"{flag}={portable_path(value, repo)}")
        elif os.path.isabs(token):
            out.append(portable_path(token, repo))
        else:
            out.append(token)
    return " ".join(out)


def portable_text(text: str, repo: Optional[Path] = None) -> str:
    """A recorded command or log line with each absolute path in it made portable; other words kept as they were."""
    return ABSOLUTE.sub(lambda m: portable_path(m.group(0), repo), text)


def scrub(text: str, repo: Optional[Path] = None) -> str:
    """An engine's error or log with each machine path in it (MACHINE_PATH: under /tmp, /home, /root ...) made
    portable; an ONNX node name such as "/layer1/conv/Conv" is left as it is."""
    if "/" not in text and ":\\" not in text:
        return text
    for base in {str(repo or REPO), _real(repo or REPO)}:
        text = text.replace(base + os.sep, "")  # the repository's own folder, wherever it was cloned (/check/...)
    if ":\\" not in text and not any(f"/{root}/" in text for root in MACHINE_ROOTS):
        return text  # nothing MACHINE_PATH can match: a long log is not scanned position by position
    return MACHINE_PATH.sub(lambda m: portable_path(m.group(0), repo), text)


@functools.lru_cache(maxsize=16)
def _real(folder: Union[str, Path]) -> str:
    """os.path.realpath of a repository folder, resolved once per process (scrub runs on every text of every cell)."""
    return os.path.realpath(folder)
