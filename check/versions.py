"""The lint's version algebra: the TensorRT versions that showed one outcome, as runs in PEP 440 order, and the
specifier set (`packaging.specifiers`) each run and each finding speaks for. Whether a set covers a version is
matrix.predict.covers, which reports read without the lint."""

from __future__ import annotations

from typing import Hashable, List, Mapping, Tuple


def runs(values: Mapping[str, Hashable]) -> List[Tuple[str, str]]:
    """(first, last) version of each run of versions, consecutive in PEP 440 order, that share one value."""
    from matrix.merge import version_key

    versions = sorted(values, key=version_key)
    found: List[Tuple[str, str]] = []
    start = 0
    for i in range(1, len(versions) + 1):
        if i == len(versions) or values[versions[i]] != values[versions[start]]:
            found.append((versions[start], versions[i - 1]))
            start = i
    return found


def specifier(first: str, last: str) -> str:
    """The specifier set of a run: "==8.6.0" for one version, ">=8.5.1.7,<=8.6.0" for several."""
    return f"=={first}" if first == last else f">={first},<={last}"


def check_specifier(versions: str) -> None:
    """InvalidSpecifier where a range is no PEP 440 specifier set ("" is every version)."""
    from packaging.specifiers import SpecifierSet

    SpecifierSet(versions)
