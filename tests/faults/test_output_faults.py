"""Faults against the outputs: injection through error texts and ids, secrets, path traversal.

Every report (Markdown, HTML, JSON, JUnit) and every bug bundle is parsed back the way its reader
would: a text from a results file stays text, never markup or code, and nothing is written outside
the output folder. Hand-made cells here test the plumbing only and go to tmp_path.
"""

from __future__ import annotations

import ast
import json
import os
import re
import subprocess
import sys
import xml.etree.ElementTree as ET
from html.parser import HTMLParser
from pathlib import Path
from typing import List, Set, Tuple

import pytest

from cases import get_case
from core.cell import Cell
from generators.bundle import load_bundle
from generators.write import write_all, write_bundle
from matrix.__main__ import main
from matrix.bugbundle import Refused, make
from matrix.inputs import STAMP
from tests.matrix.conftest import cells_from_report

REPO = Path(__file__).resolve().parents[2]
BUNDLE = "grouped_conv/cpg=3+weights=per_channel+activation=int8+output_qdq=yes+epilogue=none"
PARAMS = {"cpg": [3], "weights": ["per_channel"], "activation": ["int8"], "output_qdq": [True], "epilogue": ["none"]}
# Markup for every reader, terminal colours, control characters XML 1.0 forbids, a lone surrogate.
PAYLOAD = ('<script>alert("x")</script><img src=x onerror=alert(1)> </td></tr><!-- | `tick` ``` ]]> &amp; '
           '[click](javascript:alert(3)) ![img](javascript:alert(4)) '
           '"""; import os; os.system("echo pwned") #\x1b[31mred\x1b[0m\x00\x07\x0b\x1f\x7f\ud800 end')
MARKUP = re.compile(r"<\s*/?\s*(script|img|td|tr|!--)", re.I)
SECRETS = {"AWS_SECRET_ACCESS_KEY": "canaryAWS0ae1f", "GITHUB_TOKEN": "ghp_canary0ae1f", "QDQ_SECRET": "canaryQDQ0ae1f"}


def cell(**fields) -> Cell:
    """A failing TensorRT cell with the payload in every free-text field a results file carries."""
    base = dict(
        bundle=f"grouped_conv/x{PAYLOAD}", case="grouped_conv", params={"cpg": PAYLOAD}, digest="d" * 16,
        engine="tensorrt", engine_version=f"8.6.0{PAYLOAD}", hardware=f"NVIDIA H200 {PAYLOAD}", status="fail",
        verdict="new failure", last_stage="load", explanation=PAYLOAD, error=f"{PAYLOAD}\n{PAYLOAD}", log=PAYLOAD,
        reason=PAYLOAD, warnings=(PAYLOAD,), precision={"node_of_c": {"precision": "int8", "evidence": PAYLOAD}},
        hardware_detail={"name": PAYLOAD, "os": PAYLOAD}, versions={"python": PAYLOAD, "numpy": PAYLOAD},
        options={"tactic_sources": [PAYLOAD], "builder_flags": [PAYLOAD], "notes": [PAYLOAD]},
        run={"date": PAYLOAD, "source": "local"},
    )
    base.update(fields)
    return Cell(**base)


class Tags(HTMLParser):
    """Every start tag and attribute name an HTML parser sees."""

    def __init__(self) -> None:
        super().__init__()
        self.tags: Set[str] = set()
        self.attrs: Set[str] = set()

    def handle_starttag(self, tag, attrs):
        self.tags.add(tag)
        self.attrs |= {a for a, _ in attrs}


def html_tags(text: str) -> Tags:
    parser = Tags()
    parser.feed(text)
    parser.close()
    return parser


def markdown_outside_code(text: str) -> str:
    """Markdown with fenced blocks, indented code blocks and code spans removed: what renders as markup."""
    out: List[str] = []
    fence = ""
    for line in text.splitlines():
        m = re.match(r"^\s{0,3}(`{3,})", line)
        if fence:
            if m and len(m.group(1)) >= len(fence) and not line.strip().strip("`"):
                fence = ""
            continue
        if m:
            fence = m.group(1)
            continue
        if line.startswith("    "):
            continue
        out.append(line)
    prose = "\n".join(out)
    # Code spans: a run of n backticks up to the next run of exactly n (CommonMark).
    prose = re.sub(r"(?<!`)(`+)(?!`)(.+?)(?<!`)\1(?!`)", " ", prose)
    return prose.replace("<!-- Issue title: the line above. Body: everything below. Attach this folder (or its "
                         ".zip). -->", "")


def live_links(markdown: str) -> List[Tuple[str, str]]:
    """(text, destination) of every inline link or image a Markdown reader renders: outside code, not escaped."""
    prose = re.sub(r"\\.", "\x00", markdown_outside_code(markdown))  # a backslash escape is a plain character
    return re.findall(r"\[([^\[\]]*)\]\(([^()\s]*(?:\([^()\s]*\))?[^()\s]*)\)", prose)


def assert_markdown_has_no_raw_markup(text: str) -> None:
    prose = markdown_outside_code(text)
    assert not MARKUP.search(prose), MARKUP.search(prose).group()
    assert "\x1b" not in text and "\x00" not in text
    injected = [link for link in live_links(text) if "javascript:" in link[1]]
    assert injected == [], injected  # a results text written as a link stays text


def files_under(root: Path) -> Set[Path]:
    return {p for p in root.rglob("*")}


@pytest.fixture(scope="module")
def bundles(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("bundles")
    write_all(["grouped_conv"], PARAMS, root=root)
    return root


@pytest.fixture
def results(tmp_path) -> Path:
    path = tmp_path / "results" / "injected.jsonl"
    path.parent.mkdir()
    cells = [cell(), cell(engine="onnxruntime", engine_version="1.31.1", hardware=f"cpu: {PAYLOAD}", status="crashed",
                          verdict="new failure", bundle=f"q_output_type/{PAYLOAD}", case="q_output_type")]
    path.write_text("".join(c.to_json() + "\n" for c in cells), encoding="utf-8")
    return path


def test_injection_into_every_report_stays_text(results, tmp_path):
    out = tmp_path / "reports"
    assert main(["report", "--results", str(results), "--out", str(out)]) in (0, 1)
    junit = ET.parse(out / "junit.xml").getroot()  # well-formed despite ESC, NUL and a lone surrogate
    assert {e.tag for e in junit.iter()} <= {"testsuites", "testsuite", "testcase", "failure", "skipped"}
    failures = " ".join(e.text or "" for e in junit.iter("failure"))
    assert '<script>alert("x")</script>' in failures and "\x1b" not in failures  # text, colours dropped
    html = (out / "matrix.html").read_text(encoding="utf-8")
    own = html.rindex("<script>")  # the page's own script (the details panel): numbers only, no results text
    assert html.count("<script") == 1 and "alert" not in html[own:] and "pwned" not in html[own:]
    seen = html_tags(html[:own])
    assert not {"script", "img"} & seen.tags and "onerror" not in seen.attrs, seen.tags
    assert "&lt;script&gt;" in html
    plots = (out / "plots.html").read_text(encoding="utf-8")
    assert "<script" not in plots and not {"script", "img"} & html_tags(plots).tags and "&lt;script&gt;" in plots
    for name in ("matrix.md", "cells/grid.md"):
        assert_markdown_has_no_raw_markup((out / name).read_text(encoding="utf-8"))
    script = (out / "cells" / "details.js").read_text(encoding="utf-8")  # results text as JSON strings, nothing else
    assert script.startswith("qdqDetails(") and script.endswith(");\n")
    assert any("<script>alert" in t for t in json.loads(script[len("qdqDetails("):-3])["texts"])
    report = json.loads((out / "matrix.json").read_text(encoding="utf-8"))
    assert {report["texts"][c["error"]] for c in report["cells"]} == {f"{PAYLOAD}\n{PAYLOAD}"}  # the text exactly
    assert {c.error for c in cells_from_report(report, out)} == {f"{PAYLOAD}\n{PAYLOAD}"}
    assert all(p.resolve().parent == (out / "cells").resolve() for p in (out / "cells").iterdir())


@pytest.mark.parametrize("engine, version",
                         [("tensorrt", "8.6.0"), ("onnxruntime", "1.31.1"), ("openvino", "2026.4.1")])
def test_injection_into_a_bug_bundle_stays_text(bundles, tmp_path, engine, version):
    digest = load_bundle(bundles / BUNDLE).meta["digest"]
    bad = cell(bundle=BUNDLE, digest=digest, engine=engine, engine_version=f"{version}{PAYLOAD}")
    folder = make(bad, [bad], bundles, tmp_path / "out")
    assert (tmp_path / "out").resolve() in folder.resolve().parents
    for name in ("ISSUE.md", "commands.md"):
        if (folder / name).exists():
            assert_markdown_has_no_raw_markup((folder / name).read_text(encoding="utf-8"))
    repro = (folder / "repro.py").read_text(encoding="utf-8")
    ast.parse(repro)
    assert "pwned" not in repro and "alert" not in repro  # the cell is data in cell.json, never code
    assert repro == (REPO / "matrix" / "repro.py").read_text(encoding="utf-8")  # the static file, whatever the cell
    shipped = [p for p in (folder / "suite").rglob("*") if p.is_file()]
    assert shipped and not any(b"pwned" in p.read_bytes() or b"alert" in p.read_bytes() for p in shipped)
    recorded = json.loads((folder / "cell.json").read_text(encoding="utf-8"))["recorded"]
    assert recorded["engine_version"] == bad.engine_version
    log = (folder / "log.txt").read_text(encoding="utf-8")
    assert "\x1b" not in log and "\x00" not in log and "<script>" in log
    json.loads((folder / "environment.json").read_text(encoding="utf-8"))


@pytest.mark.parametrize("bundle", ["../../etc", "/etc/passwd", "..\\..\\windows", "grouped_conv/../../..", "C:/x"])
def test_a_traversing_bundle_id_writes_nothing(bundles, tmp_path, bundle):
    before = files_under(tmp_path)
    with pytest.raises(Refused):
        make(cell(bundle=bundle, engine="onnxruntime", engine_version="1.31.1"), [], bundles, tmp_path / "out")
    assert files_under(tmp_path) == before


@pytest.mark.parametrize("field, value", [("engine_version", "../../../../../../tmp/qdq-escape"),
                                          ("engine", "/tmp/qdq-escape"), ("engine_version", "..\\..\\..\\x"),
                                          ("hardware", "../../../../x")])
def test_a_traversing_column_stays_inside_the_output_folder(bundles, tmp_path, field, value):
    digest = load_bundle(bundles / BUNDLE).meta["digest"]
    out = tmp_path / "out"
    fields = dict(bundle=BUNDLE, digest=digest, engine="onnxruntime", engine_version="1.31.1")
    bad = cell(**dict(fields, **{field: value}))
    try:
        folder = make(bad, [bad], bundles, out)
    except Refused:  # an engine with no repro.py: refused before anything is written
        folder = None
    assert folder is None or out.resolve() in folder.resolve().parents
    assert all(out in p.parents for p in files_under(tmp_path) if p != out)
    assert not Path("/tmp/qdq-escape").exists()


def test_reports_stay_inside_their_folder(results, tmp_path):
    out = tmp_path / "reports"
    main(["report", "--results", str(results), "--out", str(out)])
    assert {p.name for p in out.iterdir()} == {"matrix.md", "matrix.html", "matrix.json", "junit.xml", "plots.html",
                                                "models.md", "models.html", "conformance.md", "conformance.html",
                                                "conformance.json", "cells", "diff", STAMP}
    assert files_under(tmp_path) - files_under(out) == {out, results.parent, results}
    assert len(list((out / "cells").glob("*.jsonl"))) == 2  # a column file each, named safely inside cells/


@pytest.mark.parametrize("value", ["../../../../../../../escape", "x/../../../../../../../../escape"])
def test_the_generator_refuses_a_traversing_bundle_id(tmp_path, value):
    root = tmp_path / "bundles"
    case = get_case("q_output_type")
    params = dict(next(iter(case.variants())), variant=value)
    with pytest.raises(ValueError, match="outside"):
        write_bundle(case, params, root)
    assert not root.exists() or not any(root.rglob("*"))


def test_secrets_in_the_environment_reach_no_output(bundles, tmp_path):
    """A real ONNX Runtime cell run with canary secrets set, then reports and a bug bundle: no canary anywhere."""
    env = dict(os.environ, PYTHONPATH=str(REPO), **SECRETS)
    results = tmp_path / "results" / "ort.jsonl"
    results.parent.mkdir()
    run = subprocess.run(
        [sys.executable, "-m", "engines.run", "-n", "0", "--engine", "onnxruntime", "--bundles", str(bundles),
         "--results", str(results)],
        cwd=str(REPO), capture_output=True, text=True, timeout=300, env=env,
    )
    cells = [json.loads(x) for x in results.read_text().splitlines() if '"bundle"' in x]
    assert [c["bundle"] for c in cells] == [BUNDLE] and cells[0]["status"] == "pass", run.stdout + run.stderr
    reports = tmp_path / "reports"
    bug_out = tmp_path / "bug-bundles"
    logs = [run.stdout, run.stderr]
    for args in (["report", "--results", str(results), "--out", str(reports)],
                 ["bugs", "--results", str(results), "--bundles", str(bundles), "--out", str(bug_out), "--cell",
                  BUNDLE, "--engine", "onnxruntime", "--version", cells[0]["engine_version"], "--zip"]):
        done = subprocess.run([sys.executable, "-m", "matrix", *args], cwd=str(REPO), capture_output=True,
                              text=True, timeout=300, env=env)
        assert done.returncode in (0, 1), done.stderr
        logs += [done.stdout, done.stderr]
    written = [p for p in tmp_path.rglob("*") if p.is_file()]
    assert any(p.name == "ISSUE.md" for p in written) and any(p.name == "junit.xml" for p in written)
    for secret in SECRETS.values():
        leaks = [str(p) for p in written if secret.encode() in p.read_bytes()]
        assert not leaks and not any(secret in text for text in logs), (secret, leaks)


def test_injection_into_your_models_stays_text(tmp_path):
    """A user model's cell with the payload in its id, model name and parser error: the table and its per-node
    report links stay text, inside the output folder."""
    path = tmp_path / "results" / "models.jsonl"
    path.parent.mkdir()
    error = f"ONNX parse failed: Invalid Node - {PAYLOAD}\n{PAYLOAD}: {PAYLOAD}"
    mine = cell(bundle=f"user_model/../{PAYLOAD}", case="user_model", params={"model": PAYLOAD}, last_stage="",
                error=error, engine_version="8.6.0")
    path.write_text(mine.to_json() + "\n", encoding="utf-8")
    out = tmp_path / "reports"
    assert main(["report", "--results", str(path), "--out", str(out)]) in (0, 1)
    assert all(out in p.parents for p in files_under(tmp_path) if p.suffix in (".md", ".html", ".json"))
    html = (out / "matrix.html").read_text(encoding="utf-8")
    own = html.rindex("<script>")
    seen = html_tags(html[:own])
    assert not {"script", "img"} & seen.tags and "onerror" not in seen.attrs, seen.tags
    assert 'id="models"' in html and "&lt;script&gt;" in html[html.index('id="models"'):]
    md = (out / "matrix.md").read_text(encoding="utf-8")
    assert "## Your models" in md
    assert_markdown_has_no_raw_markup(md)
