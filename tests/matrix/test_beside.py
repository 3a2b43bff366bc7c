"""The report's side process (matrix.beside): its answer comes back, its failure is the report's, and it never
outlives the report, whether the report fails, is killed, or the side process itself dies."""

from __future__ import annotations

import errno
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path
from typing import Any, Callable, Dict, List

import pytest

from matrix.beside import SideDied, beside

REPO = Path(__file__).resolve().parents[2]
CPU = "cpu: Intel(R) Xeon(R) (avx512_vnni)"
forks = pytest.mark.skipif(not hasattr(os, "fork"), reason="no os.fork here: the work runs in the report's process")


def _gone(pid: int, within: float = 10.0) -> bool:
    """Whether pid has ended (reaped, or a zombie waiting for its new parent) within the given seconds."""
    deadline = time.monotonic() + within
    while True:
        try:
            state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except (OSError, IndexError):
            return True
        if state in ("Z", "X"):
            return True
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)


def _pid_from(path: Path, within: float = 10.0) -> int:
    """The pid a child wrote to path, once it has."""
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        if path.is_file() and path.read_text().strip():
            return int(path.read_text())
        time.sleep(0.02)
    raise AssertionError(f"no pid in {path}")


@forks
def test_the_answer_comes_from_a_child_that_inherited_what_was_loaded() -> None:
    loaded = list(range(100_000))  # in the parent's memory only: the child sees it without its being sent

    with beside(lambda: (os.getpid(), sum(loaded))) as side:
        pid, total = side.answer()
        side.wait()
    assert pid != os.getpid() and total == sum(loaded)


@forks
def test_the_child_goes_on_with_its_files_without_waiting_for_the_report_to_read_its_answer(tmp_path: Path) -> None:
    """An answer bigger than a pipe holds: the child still goes on to its files while the report is busy (the
    report reads the pipe as the answer comes), and the answer arrives whole."""
    big = "x" * 4_000_000
    written = tmp_path / "written"

    with beside(lambda: big, lambda answer: written.write_text(str(len(answer)))) as side:
        assert _pid_from(written) == len(big), "the child waited for the report to read its answer"
        assert side.answer() == big
        side.wait()


@forks
def test_an_error_after_the_answer_is_raised_by_the_wait() -> None:
    def then(answer: int) -> None:
        raise OSError(errno.ENOSPC, "No space left on device", "junit.xml")

    with pytest.raises(OSError, match="No space left") as caught, beside(lambda: 42, then) as side:
        assert side.answer() == 42
        side.wait()
    assert caught.value.filename == "junit.xml"


@forks
def test_a_childs_error_is_raised_in_the_report_as_itself() -> None:
    """A full disk in the child is the report's full disk: the same OSError, its errno kept (the report then says
    it in one line, exit 3), the child's traceback in its notes."""

    def full() -> None:
        raise OSError(errno.ENOSPC, "No space left on device", "cells/x.jsonl")

    with pytest.raises(OSError) as caught, beside(full) as side:
        side.answer()
    assert caught.value.errno == errno.ENOSPC and caught.value.filename == "cells/x.jsonl"
    assert any("side process" in n and ", in full" in n for n in caught.value.__notes__)


@forks
def test_a_child_killed_by_a_signal_fails_the_report_naming_it() -> None:
    with pytest.raises(SideDied, match=r"was killed by signal 9 \(SIGKILL\) before it said it was done"), \
            beside(lambda: os.kill(os.getpid(), signal.SIGKILL)) as side:
        side.answer()


@forks
def test_a_child_that_exits_without_its_answer_fails_the_report_with_its_status() -> None:
    with pytest.raises(SideDied, match="exited with status 7 before it said it was done"), \
            beside(lambda: os._exit(7)) as side:
        side.answer()


@forks
def test_a_report_that_fails_takes_its_child_with_it(tmp_path: Path) -> None:
    """The report's own error while the child still works: the child is killed and reaped before the error goes
    on (it writes nothing into a staging folder that is being removed)."""
    said, finished = tmp_path / "pid", tmp_path / "finished"

    def slow() -> None:
        said.write_text(str(os.getpid()))
        time.sleep(20)
        finished.write_text("the side process was left to finish its work")

    with pytest.raises(RuntimeError, match="the report's own"), beside(slow):
        pid = _pid_from(said)
        raise RuntimeError("the report's own error")
    with pytest.raises(ChildProcessError):  # reaped: no longer this process's child
        os.waitpid(pid, os.WNOHANG)
    assert _gone(pid, within=0) and not finished.exists()


def test_without_fork_both_parts_run_in_the_report(monkeypatch, tmp_path: Path) -> None:
    monkeypatch.delattr(os, "fork", raising=False)
    written = tmp_path / "written"

    with beside(lambda: os.getpid(), lambda pid: written.write_text(str(pid))) as side:
        assert side.answer() == os.getpid()
        side.wait()
    assert written.read_text() == str(os.getpid())


# A suite started in the background (`nohup ... &`) ignores SIGINT, and every process it starts inherits that: the
# report is told to act on Ctrl-C as one started from a terminal does.
IGNORED_SIGINT = "as started from a terminal, however the suite was started"


@forks
@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="PR_SET_PDEATHSIG is Linux's")
@pytest.mark.parametrize("how", [signal.SIGKILL, signal.SIGTERM, signal.SIGINT])
def test_a_killed_report_takes_its_child_with_it(tmp_path: Path, how: signal.Signals) -> None:
    """Killed outright, terminated, or Ctrl-C (SIGINT to the report alone, as a supervisor sends it): the side
    process ends with it."""
    said = tmp_path / "pid"
    script = textwrap.dedent(f"""
        import os, signal, time
        signal.signal(signal.SIGINT, signal.default_int_handler)  # {IGNORED_SIGINT}
        from matrix.beside import beside

        def slow():
            open({str(said)!r}, "w").write(str(os.getpid()))
            time.sleep(120)

        with beside(slow) as side:
            side.answer()
    """)
    parent = subprocess.Popen([sys.executable, "-c", script], cwd=REPO, env={**os.environ, "PYTHONPATH": str(REPO)})
    try:
        child = _pid_from(said)
        parent.send_signal(how)
        parent.wait(timeout=30)
        assert _gone(child), f"the side process {child} outlived its killed parent"
    finally:
        parent.kill()
        parent.wait(timeout=30)


def _report(paths: List[Path], out: Path, tmp_path: Path) -> int:
    import matrix.__main__

    args = ["report", *[a for p in paths for a in ("--results", str(p))], "--out", str(out),
            "--bundles", str(tmp_path / "none"), "--force"]
    return matrix.__main__.main(args)


def _two_versions(make_cell: Callable[..., Any], write_results: Callable[..., Path]) -> List[Path]:
    """Results of two TensorRT versions (an upgrade answer and a diff file) and one CPU engine."""
    ort = make_cell("q_output_type/out=uint8", engine="onnxruntime", engine_version="1.31.1", hardware=CPU)
    trt = [make_cell("grouped_conv/g=2", engine_version=v, status=status, verdict=verdict, last_stage=stage,
                     error=error, fused=None)
           for v, status, verdict, stage, error in (("8.5.3.1", "pass", "as documented", "compare", ""),
                                                    ("8.6.0", "fail", "new failure", "build", "no implementation"))]
    return [write_results("ort.jsonl", [ort]), write_results("trt-8.5.3.1.jsonl", trt[:1]),
            write_results("trt-8.6.0.jsonl", trt[1:])]


def _tree(folder: Path) -> Dict[str, bytes]:
    return {p.relative_to(folder).as_posix(): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


@forks
@pytest.mark.parametrize("fails", ["write_cells", "upgrade_view"])
def test_a_side_process_that_fails_leaves_the_reports_that_were_there(make_cell, write_results, tmp_path, monkeypatch,
                                                                      fails: str) -> None:
    """The side process's full disk (writing cells/, or computing the upgrade answer): the report exits 3 as for
    its own, the reports already in --out stand byte for byte, and no staging folder is left."""
    paths = _two_versions(make_cell, write_results)
    out = tmp_path / "reports"
    assert _report(paths, out, tmp_path) == 0
    before = _tree(out)
    module = "matrix.render" if fails == "write_cells" else "matrix.view"
    parent = os.getpid()

    def full(*args: Any, **kwargs: Any) -> None:
        assert os.getpid() != parent, "the side process's work ran in the report's process"
        raise OSError(errno.ENOSPC, "No space left on device", str(out))

    monkeypatch.setattr(f"{module}.{fails}", full)
    assert _report(paths, out, tmp_path) == 3
    assert _tree(out) == before
    assert not [p for p in out.iterdir() if p.name.startswith(".staging-")]


@forks
@pytest.mark.parametrize("dies_in", ["matrix.view.upgrade_view", "matrix.render.write_cells"])
def test_a_side_process_killed_fails_the_report_and_leaves_the_reports_that_were_there(make_cell, write_results,
                                                                                      tmp_path, monkeypatch,
                                                                                      dies_in: str) -> None:
    """Killed before it sent its views, or after, writing cells/: the report fails naming the signal."""
    paths = _two_versions(make_cell, write_results)
    out = tmp_path / "reports"
    assert _report(paths, out, tmp_path) == 0
    before = _tree(out)
    monkeypatch.setattr(dies_in, lambda *args: os.kill(os.getpid(), signal.SIGKILL))
    with pytest.raises(SideDied, match=r"killed by signal 9"):
        _report(paths, out, tmp_path)
    assert _tree(out) == before
    assert not [p for p in out.iterdir() if p.name.startswith(".staging-")]


def test_the_report_with_its_side_process_writes_what_one_process_writes(make_cell, write_results, tmp_path) -> None:
    """Every file `matrix report` writes (part of them in its side process) is byte for byte the file the view and
    its writers make in one process (tests.matrix.conftest.write_reports), the generation time apart."""
    from matrix.merge import catalogue_bundles, load_results
    from tests.matrix.conftest import write_reports

    paths = _two_versions(make_cell, write_results)
    out = tmp_path / "reports"
    assert _report(paths, out, tmp_path) == 0
    generated = json_generated(out)
    alone = tmp_path / "alone"
    write_reports(load_results(paths, catalogue_bundles(tmp_path / "none")), alone, generated)
    made, expected = _tree(out), _tree(alone)
    made.pop(".report-inputs.json")
    assert sorted(made) == sorted(expected) and "junit.xml" in made and any(n.startswith("diff/") for n in made)
    assert [n for n in made if made[n] != expected[n]] == []


def json_generated(out: Path) -> str:
    """The generation time matrix.json says."""
    import json

    return json.loads((out / "matrix.json").read_text(encoding="utf-8"))["generated"]
