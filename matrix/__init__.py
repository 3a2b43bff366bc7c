"""Reports from results files: merge JSONL cells, render the matrix, diff two engine versions.

Never imports an engine, so reports build on any machine:

    python -m matrix report [--results DIR ...] [--out reports] [--bundles .bundles]
    python -m matrix diff ENGINE FROM TO [--results DIR ...] [--hardware H] [--out FILE]
"""

from __future__ import annotations

from matrix.merge import Column, MergeResult, Problem, Row, load_results

__all__ = ["Column", "MergeResult", "Problem", "Row", "load_results"]
