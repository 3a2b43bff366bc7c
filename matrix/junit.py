"""junit.xml: a testsuite per column, a testcase per cell, for CI systems that read JUnit XML."""

from __future__ import annotations

import xml.etree.ElementTree as ET

from core.cell import Cell
from core.words import JUNIT, STATUS_WORDS
from matrix.cellfiles import column_file
from matrix.details import cell_details
from matrix.merge import MergeResult
from matrix.safe import clean

UNDOCUMENTED = "no source documents this cell"  # a failing cell's details without an expectation


def junit_xml(result: MergeResult) -> bytes:
    """JUnit XML: a testsuite per column, a testcase per cell; unexpected verdicts fail (naming the column file
    under cells/ with the whole cell), a harness error is an error (the suite's, with its traceback), not-run cells
    skip."""
    root = ET.Element("testsuites", name="qdq-matrix")
    totals = {"tests": 0, "failures": 0, "errors": 0, "skipped": 0}
    by_column = result.by_column()
    for col in result.columns:
        cells = sorted(by_column[col.key], key=lambda c: c.bundle)
        suite = ET.SubElement(root, "testsuite", name=col.id, hostname=col.setting, timestamp=col.date)
        counts = {"tests": len(cells), "failures": 0, "errors": 0, "skipped": 0}
        whole, never_run = column_file(col), col.provenance if col.never_run else ""  # the column's, said per cell
        for cell in cells:
            kind = _junit_case(suite, cell, whole, never_run)
            if kind:
                counts[kind] += 1
        for k, v in counts.items():
            suite.set(k, str(v))
            totals[k] += v
    for k, v in totals.items():
        root.set(k, str(v))
    for node in root.iter():  # XML 1.0 has no escape for most control characters: make them visible text
        node.text = clean(node.text)
        for k, v in node.attrib.items():
            node.set(k, clean(v))
    return ET.tostring(root, encoding="utf-8", xml_declaration=True)


def failure_text(cell: Cell, whole: str) -> str:
    """A failing cell's details (matrix.details, as the grid says them), where it ran, and its whole cell's file."""
    run = cell.run
    said = [("verdict", cell.verdict), *cell_details(cell)]
    said += [] if cell.expectation else [("expected", UNDOCUMENTED)]
    said += [("run", ", ".join(x for x in (run.get("source", ""), run.get("date", ""), run.get("file", "")) if x)),
             ("whole cell", whole)]
    return "\n".join(f"{k}: {v}" for k, v in said)


def _junit_case(suite: ET.Element, cell: Cell, whole: str, never_run: str = "") -> str:
    case = ET.SubElement(suite, "testcase", classname=cell.case, name=cell.bundle.split("/", 1)[-1],
                         time=f"{sum(cell.timings.values()):.3f}")
    kind, status = JUNIT[cell.verdict], STATUS_WORDS[cell.status]  # an unknown word fails loudly
    if kind == "failures":
        node = ET.SubElement(case, "failure", message=f"{cell.verdict}: {cell.explanation}", type=cell.verdict)
        node.text = failure_text(cell, whole)
    elif kind == "errors":
        node = ET.SubElement(case, "error", message=f"{cell.verdict}: {cell.reason}", type=cell.status)
        node.text = cell.log
    elif kind == "skipped":
        ET.SubElement(case, "skipped", message=never_run or cell.reason or status)
    return kind
