#!/usr/bin/env python3
"""Reproduce one recorded qdq-matrix cell with the suite's own code; the cell is data in cell.json beside this file.

    python repro.py                  # the engine in a process of its own (a crash is observed, not suffered)
    python repro.py --inline         # ONNX Runtime and OpenVINO in this process, with full tracebacks
    python repro.py --json out.json  # also write what was observed, the recorded cell and the verdict
    python repro.py --verbose        # TensorRT family: also build once more with the logger at VERBOSE, kept in
                                     # build-verbose.log beside this file (what NVIDIA asks for with a build failure)

A bug bundle (`python -m matrix bugs`) holds this file unchanged, next to the reproducer that ran (model.onnx,
inputs.npz, expected.npz, case.json, and float.npz where a user bundle has the float model's outputs), cell.json
(what the suite recorded, and how its adapter ran the engine) and suite/, the suite's own files copied unchanged:
judge.py (the one judge of a cell, core/judge.py) with the numerics.py, words.py and engines.py it imports, and
either tensorrt/ (TensorRT and TensorRT-RTX: the worker, engines/tensorrt/*.py, run in its own process as the adapter
runs it) or stages.py (ONNX Runtime or OpenVINO: the adapter's stages, engines/<engine>/stages.py). A model with
dynamic inputs builds with the optimization profile the cell recorded (cell.json request.profile). What happens is
judged by the judge the suite's cells are judged with: the same status and stage rules, the outputs in steps or by SQNR
and cosine with its floors, and which INT8, INT4, FP8 or FP4 evidence is fused. The last line says one of three
things, each with its own exit status:

    REPRODUCED: ...          0  the recorded status and stage (the documented signature and INT8 fusion where the
                                cell has them) happen here; the line sets the max error against the recorded one
    DID NOT REPRODUCE: ...   1  the engine ran here and did otherwise
    COULD NOT RUN HERE: ...  3  nothing was tried: the engine module (or numpy) is not installed, or the engine needs
                                an NVIDIA GPU and its driver that this machine lacks; the line names what is missing
                                and the command that installs the engine. It says nothing about the bug.

Python 3.9+, numpy and the engine (tensorrt, tensorrt_rtx, onnxruntime or openvino); nothing from the repository.
"""

from __future__ import annotations

import importlib
import importlib.util
import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import traceback
import types
from typing import Any, Dict, List, Optional, Tuple

try:
    import numpy as np
except ImportError:  # main() says so: could not run here
    np = None  # type: ignore[assignment]

HERE = os.path.dirname(os.path.abspath(__file__))
SUITE = os.path.join(HERE, "suite")
SAME_ERROR = 1e-6  # steps: a max error this close to the recorded one is the recorded one
STDERR_TAIL = 4000
REPRODUCED, NOT_REPRODUCED, USAGE, COULD_NOT_RUN = 0, 1, 2, 3  # exit statuses
VERBOSE_LOG = "build-verbose.log"


class Observation:
    """What the engine did, before it is judged (engines.base.Observation's fields that a verdict reads)."""

    def __init__(self) -> None:
        self.stage = ""
        self.error = ""
        self.log = ""
        self.outputs: Dict[str, np.ndarray] = {}
        self.precision: Dict[str, Dict[str, Any]] = {}
        self.options: Dict[str, Any] = {}
        self.timings: Dict[str, float] = {}
        self.crashed = ""
        self.not_run_here = ""
        self.version = ""
        self.notes: List[str] = []
        self.traceback = ""
        self.missing: List[str] = []  # what this machine lacks to run the engine: nothing was tried


def read_json(name: str) -> Any:
    with open(os.path.join(HERE, name), encoding="utf-8") as f:
        return json.load(f)


def read_npz(name: str) -> Dict[str, np.ndarray]:
    with np.load(os.path.join(HERE, name)) as f:
        return {k: f[k] for k in f.files}


def suite_module(relative: str, name: str) -> types.ModuleType:
    """One of the suite's files under suite/, loaded by path under a private name."""
    spec = importlib.util.spec_from_file_location(name, os.path.join(SUITE, relative))
    if spec is None or spec.loader is None:
        raise ImportError(f"suite/{relative} is missing from this bug bundle")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # dataclasses look their module up while the file runs
    spec.loader.exec_module(module)
    return module


# ---- judging: the suite's own judge (suite/judge.py, core/judge.py, with its siblings numerics.py and words.py) ----

def suite(name: str) -> types.ModuleType:
    """One of the suite's own modules under suite/ (judge, numerics, words), loaded as the package the judge imports
    its siblings from (qdq_suite): this bundle's, never one an earlier bundle loaded in this process."""
    package = sys.modules.get("qdq_suite")
    if package is None or list(getattr(package, "__path__", [])) != [SUITE]:
        for loaded in [m for m in sys.modules if m == "qdq_suite" or m.startswith("qdq_suite.")]:
            del sys.modules[loaded]
        package = types.ModuleType("qdq_suite")
        package.__path__ = [SUITE]  # type: ignore[attr-defined]
        sys.modules["qdq_suite"] = package
    return importlib.import_module(f"qdq_suite.{name}")


def references() -> Tuple[Dict[str, np.ndarray], Dict[str, np.ndarray]]:
    """The bundle's reference outputs and, where it has them, its float model's."""
    floats = read_npz("float.npz") if os.path.isfile(os.path.join(HERE, "float.npz")) else {}
    return read_npz("expected.npz"), floats


def judge(obs: Observation, case: Dict[str, Any]) -> Dict[str, Any]:
    """An observation judged by the judge the suite's cells are judged with (suite/judge.py): status, stage, error,
    max error, fusion and what a pass has to say (numerics not compared, or numerically fragile)."""
    if obs.missing:
        return dict(not_tried(obs.missing), notes=obs.notes)
    said = suite("judge").judge(obs, case, references=references)
    return {
        "status": said.status, "stage": said.stage, "error": said.error or obs.crashed, "log": obs.log,
        "max_error_steps": said.worst_steps, "fused": said.fused, "reason": said.reason,
        "version": obs.version, "notes": obs.notes, "traceback": obs.traceback, "missing": obs.missing,
    }


# ---- TensorRT and TensorRT-RTX: the suite's worker, in a process of its own ----

def trt_module(name: str) -> types.ModuleType:
    """One of the worker's files (suite/tensorrt/), loaded as the package the worker loads them as (qdq_trt)."""
    package = types.ModuleType("qdq_trt")
    package.__path__ = [os.path.join(SUITE, "tensorrt")]  # type: ignore[attr-defined]
    sys.modules.setdefault("qdq_trt", package)
    return importlib.import_module(f"qdq_trt.{name}")


def observe_worker(cell: Dict[str, Any], tmp: str, verbose: bool = False) -> Observation:
    """The worker (suite/tensorrt/worker.py) on this bundle, as engines/tensorrt's adapter runs it (isolated); with
    `verbose`, the worker's verbose build log is copied beside this file."""
    obs = Observation()
    gpu = trt_module("gpu").detect()
    tinspect = trt_module("inspect")
    engine = cell["engine"]
    if engine.get("plugin_link", "none") != "none":
        obs.notes.append(f"the suite gave the worker a {engine['plugin_link']} link to the wheel's library "
                         "(--rtx-plugin-link); put one on LD_LIBRARY_PATH for the same run")
    out = os.path.join(tmp, "out")
    request = dict(cell["request"], model=os.path.join(HERE, "model.onnx"), inputs=os.path.join(HERE, "inputs.npz"),
                   out=out, gpu={"present": gpu.present, "label": gpu.label, "reason": gpu.reason})
    request["trt"] = dict(request.get("trt") or {}, verbose_log=verbose)
    path = os.path.join(tmp, "request.json")
    with open(path, "w", encoding="utf-8") as f:
        json.dump(request, f, indent=1)
    worker = os.path.join(SUITE, "tensorrt", "worker.py")
    rc, stderr, obs.crashed = run_isolated([sys.executable, worker, "--module", engine["module"], path], tmp,
                                           int(cell["timeout_s"]))
    result = _json_file(os.path.join(out, "result.json")) or {}
    if result.get("cannot_run"):  # the worker could not import the engine, or it needs a GPU: nothing was tried
        obs.missing = [str(result["cannot_run"])]
        return obs
    if verbose:
        obs.notes.append(keep_verbose_log(result.get("verbose_log") or {}, crashed=bool(obs.crashed)))
    messages = _log_lines(os.path.join(out, "log.jsonl")) or result.get("log") or []
    text = tinspect.log_text(messages)
    extra = [f"[PARSER] {e['desc']}" for e in result.get("parser_errors") or []
             if e.get("desc") and e["desc"] not in text]
    obs.log = "\n".join(x for x in [text] + extra if x)
    obs.error = result.get("error", "")
    if (obs.crashed or (rc != 0 and not obs.error)) and stderr.strip():
        obs.log = "\n".join(x for x in (obs.log, f"[worker stderr] {_tail(stderr)}") if x)
    if rc != 0 and not obs.crashed and not obs.error:
        obs.error = f"worker exited with status {rc}: {_tail(stderr, 500)}"
    if result.get("outputs") and os.path.isfile(result["outputs"]):
        with np.load(result["outputs"]) as f:
            obs.outputs = {name: f[f"arr_{i}"] for i, name in enumerate(result.get("output_names") or [])}
    obs.stage, obs.precision = result.get("stage", ""), result.get("precision") or {}
    obs.options = dict(result.get("options") or {})
    obs.not_run_here = "" if obs.error or obs.crashed else str(result.get("not_run_here") or "")
    obs.version = (result.get("versions") or {}).get(engine["module"], "")
    obs.notes += [str(n) for n in obs.options.get("notes") or []]
    for name, shape in (obs.options.get("profile") or {}).items():  # the same profile as the recorded cell
        obs.notes.append(f"optimization profile {name}: min {shape['min']}, opt {shape['opt']}, max {shape['max']}")
    obs.traceback = result.get("traceback", "")
    return obs


def keep_verbose_log(said: Dict[str, Any], crashed: bool) -> str:
    """The worker's verbose build log copied beside this file; what a note says of it."""
    if said.get("state") != "done" or not os.path.isfile(str(said.get("file"))):
        why = "the process died during the verbose build" if crashed else "the worker wrote none"
        return f"no verbose build log: {why}"
    target = os.path.join(HERE, VERBOSE_LOG)
    with open(said["file"], encoding="utf-8", errors="replace") as src, open(target, "w", encoding="utf-8") as dst:
        dst.write(src.read())
    cut = "" if said.get("kept") == said.get("bytes") else \
        f", its last {said.get('kept')} of {said.get('bytes')} bytes"
    return f"verbose build log (the model parsed and built once more, logger at VERBOSE): {target}{cut}"


def run_isolated(command: List[str], cwd: str, timeout: int) -> Tuple[int, str, str]:
    """(return code, stderr, crash description) of a process in its own session, killed whole after timeout."""
    with open(os.path.join(cwd, "stderr.txt"), "w+") as err, open(os.path.join(cwd, "stdout.txt"), "w+") as out:
        proc = subprocess.Popen(command, stdout=out, stderr=err, cwd=cwd, start_new_session=True)
        try:
            rc = proc.wait(timeout=timeout)
            crashed = signal_text(-rc) if rc < 0 else ""
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
            rc, crashed = proc.returncode, f"timeout after {timeout} s"
        err.seek(0)
        return rc, err.read(), crashed


# ---- ONNX Runtime and OpenVINO: the adapter's stages (suite/stages.py) ----

def observe_here(cell: Dict[str, Any], case: Dict[str, Any]) -> Observation:
    """The adapter's stages in this process; an engine that is not installed raises ImportError."""
    obs = Observation()
    stages = suite_module("stages.py", "qdq_suite_stages")
    options = cell["options"]
    name = cell["engine"]["name"]
    engine = importlib.import_module(cell["engine"]["module"])
    obs.version = str(getattr(engine, "__version__", "") or "")
    try:
        if name == "onnxruntime":
            with tempfile.TemporaryDirectory(prefix="qdq-ort-") as tmp:
                session = stages.run_stages(engine, os.path.join(HERE, "model.onnx"), read_npz("inputs.npz"), tmp,
                                            options["providers"], options["graph_optimization_level"],
                                            options["x64quantprecision"], obs)
                if session is not None:
                    session.end_profiling()
        elif name == "openvino":
            compiled = stages.compile_stages(engine, os.path.join(HERE, "model.onnx"), options["device"],
                                             options["config"], obs)
            if compiled is not None:
                stages.run_stage(compiled, read_npz("inputs.npz"), list(case.get("outputs") or {}), obs)
        else:
            raise ValueError(f"no stages for engine {name!r} in this bug bundle")
    except Exception as exc:  # as the adapter: a fault outside a stage is still the cell's error
        obs.error = obs.error or f"{type(exc).__name__}: {exc}"
        obs.traceback = traceback.format_exc()
    return obs


def observe_in_child(timeout: int) -> Dict[str, Any]:
    """This script's --child run in a fresh interpreter, so that a crash or a hang is recorded as one."""
    with tempfile.TemporaryDirectory(prefix="qdq-repro-") as tmp:
        out = os.path.join(tmp, "observed.json")
        rc, stderr, crashed = run_isolated([sys.executable, os.path.abspath(__file__), "--child", out], tmp, timeout)
        found = _json_file(out)
    if crashed or found is None:
        why = crashed or f"exited with status {rc} before writing a result"
        return {"status": "crashed", "stage": "", "error": why, "log": _tail(stderr), "max_error_steps": None,
                "fused": None, "reason": why, "version": "", "notes": [], "traceback": ""}
    found["log"] = "\n".join(x for x in (found["log"], stderr.strip()) if x)  # engines warn on stderr
    return found


# ---- the verdict ----

def observe(cell: Dict[str, Any], inline: bool, verbose: bool = False) -> Dict[str, Any]:
    """What happens here, judged: TensorRT through its worker, the others in a child process unless inline."""
    missing = missing_here(cell)
    if missing:
        return not_tried(missing)
    if cell["engine"]["family"] == "tensorrt":
        return guarded(cell, lambda case: _in_tmp(lambda tmp: observe_worker(cell, tmp, verbose)))
    if not inline:
        return observe_in_child(int(cell["timeout_s"]))
    return guarded(cell, lambda case: observe_here(cell, case))


def guarded(cell: Dict[str, Any], run: Any) -> Dict[str, Any]:
    """run(case) judged; an engine that cannot be imported here is "could not run" (nothing was tried)."""
    case = read_json("case.json")
    try:
        return judge(run(case), case)
    except ImportError as exc:
        return not_tried([f"{cell['engine']['module']} could not be imported ({type(exc).__name__}: {exc})"])


def not_tried(missing: List[str]) -> Dict[str, Any]:
    """The outcome of a run that could not start here, naming what is missing."""
    why = "; ".join(missing)
    return {"status": "not_run", "stage": "", "error": why, "log": "", "max_error_steps": None, "fused": None,
            "reason": why, "version": "", "notes": [], "traceback": "", "missing": list(missing)}


# ---- could it run here at all ----

def engine_device(engine: Dict[str, Any]) -> str:
    """"nvidia-gpu" (TensorRT: builds and runs on a GPU), "aot" (TensorRT-RTX: builds anywhere) or "cpu", as the
    engine's descriptor says (cell.json)."""
    return str(engine.get("device") or "cpu")


def needs_gpu(cell: Dict[str, Any]) -> bool:
    """Whether the recorded outcome needs an NVIDIA GPU here: TensorRT always; TensorRT-RTX where the cell got past
    its ahead-of-time build (a plan that ran, or failed to)."""
    device = engine_device(cell["engine"])
    recorded = cell["recorded"]
    if device == "aot":
        return recorded["status"] != "built" and recorded.get("last_stage") in suite("words").STAGES[1:]
    return device == "nvidia-gpu"


def missing_here(cell: Dict[str, Any]) -> List[str]:
    """What this machine lacks to run the cell's engine, before anything is tried ([] where nothing is missing); where
    TensorRT is installed, the worker says whether it lacks a GPU (a test's stand-in tensorrt needs none)."""
    engine = cell["engine"]
    lacks = [] if np is not None else ["numpy is not installed"]
    installed = importlib.util.find_spec(engine["module"]) is not None
    if not installed:
        lacks.append(f"{engine['module']} ({engine['title']}) is not installed")
    if needs_gpu(cell) and (not installed or engine_device(engine) != "nvidia-gpu"):
        gpu = trt_module("gpu")
        found = gpu.detect()
        if not found.present:
            lacks.append("no NVIDIA GPU on this machine" if found.reason == gpu.NO_GPU
                         else f"the NVIDIA GPU's driver does not answer ({found.reason})")
    return lacks


def could_not_run(cell: Dict[str, Any], missing: List[str]) -> str:
    """The last line of a run that could not start: what is missing and what installs it."""
    engine = cell["engine"]
    install = engine.get("install") or f"pip install {engine.get('requirement') or engine['module']}"
    gpu = ", on a machine with an NVIDIA GPU and its driver" if needs_gpu(cell) else ""
    return (f"COULD NOT RUN HERE: {'; '.join(missing)}. {engine['title']} {cell['recorded']['engine_version']} needs: "
            f"{install}{gpu}. Nothing was run: this says nothing about the recorded outcome.")


def _in_tmp(run: Any) -> Any:
    with tempfile.TemporaryDirectory(prefix="qdq-repro-") as tmp:
        return run(tmp)


def describe(found: Dict[str, Any], tolerance: float) -> str:
    """One outcome in words: "pass (max error 0.5 steps, tolerance 1)", "fail at build: ...", "crashed: ..."."""
    status, error = found["status"], first_line(found.get("error") or found.get("reason") or "")
    if status == "pass":
        worst = found.get("max_error_steps")
        shown = "n/a" if worst is None else f"{worst:.3g}"
        note = first_line(found.get("reason") or "")
        return f"pass (max error {shown} steps, tolerance {tolerance:g})" + (f": {note}" if note else "")
    if status == "fail":
        return f"fail at {found.get('failed_stage') or '?'}: {error}"
    if status == "built":
        return f"built ahead of time, not run here: {error}"
    return f"{status.replace('_', ' ')}: {error}"


def verdict(recorded: Dict[str, Any], found: Dict[str, Any]) -> Tuple[bool, str]:
    """Is the recorded outcome reproduced: the same status and stage, the documented signature and INT8 fusion
    where the cell has them; the line also sets the max error against the recorded one."""
    words = suite("words")
    want, tolerance = recorded["status"], float(recorded["tolerance_steps"])
    same = found["status"] == want and want in words.REPRODUCIBLE
    marks = []
    if same and want in words.STAGED:
        seen = recorded.get("last_stages_seen") or []  # this version failed it at several stages in the suite's runs
        same = found.get("stage", "") == recorded["last_stage"] or (want == "fail" and found.get("stage", "") in seen)
        if seen and want == "fail":
            stages = recorded.get("failed_stages_seen") or seen
            marks.append(f"its stage varies from run to run: the suite's runs of this version failed it at "
                         f"{' and at '.join(stages)}")
    if recorded.get("signature_regex") and found["status"] in words.FAILED:
        text = "\n".join(str(found.get(k) or "") for k in ("error", "log"))
        matched = re.search(recorded["signature_regex"], text) is not None
        marks.append(f"signature {recorded['signature']} {'matched' if matched else 'NOT matched'}")
        same = same and matched
    if recorded.get("fused") is not None and found.get("fused") is not None:
        marks.append("INT8 " + ("fused" if found["fused"] else "not fused")
                     + ("" if found["fused"] == recorded["fused"] else ", unlike the recorded cell"))
        same = same and found["fused"] == recorded["fused"]
    mine, theirs = found.get("max_error_steps"), recorded.get("max_error_steps")
    if mine is not None and theirs is not None:
        marks.append("max error as recorded" if abs(mine - theirs) <= SAME_ERROR or mine == theirs else
                     f"max error {mine:.6g} steps, recorded {theirs:.6g}")
    line = describe(found, tolerance) + "".join(f" [{m}]" for m in marks)
    if same:
        return True, f"REPRODUCED: {line}"
    then = dict(recorded, error=recorded.get("error_first_line") or recorded.get("reason") or "")
    return False, f"DID NOT REPRODUCE: {line}; recorded: {describe(then, tolerance)}"


def report(cell: Dict[str, Any], found: Dict[str, Any]) -> Tuple[int, str]:
    """Print what happened and the last line; (exit status, that line)."""
    recorded = cell["recorded"]
    # the stage that failed after each last stage reached: core/outcome.py's, as cell.json carries it
    found = dict(found, failed_stage=cell["failed_stages"][found.get("stage", "")])
    print(f"{recorded['bundle']} on {recorded['engine']} {found.get('version') or 'unknown'} "
          f"(recorded on {recorded['engine_version']}, {recorded['hardware']})")
    for note in found.get("notes") or []:
        print(f"note: {note}")
    if found.get("missing"):
        line = could_not_run(cell, found["missing"])
        print(line)
        return COULD_NOT_RUN, line
    if found.get("error"):
        print("error:\n  " + "\n  ".join(str(found["error"]).strip().splitlines()[:20]))
    if found.get("traceback") and found["status"] != "pass":
        print(found["traceback"].rstrip())
    ok, line = verdict(recorded, found)
    print(line)
    return (REPRODUCED if ok else NOT_REPRODUCED), line


def first_line(text: str) -> str:
    lines = [x.strip() for x in str(text).strip().splitlines() if x.strip()]
    return lines[0] if lines else ""


def signal_text(num: int) -> str:
    try:
        return f"signal {num} ({signal.Signals(num).name})"
    except ValueError:
        return f"signal {num}"


def _tail(text: str, limit: int = STDERR_TAIL) -> str:
    text = text.strip()
    return text if len(text) <= limit else "..." + text[-limit:]


def _json_file(path: str) -> Optional[Dict[str, Any]]:
    try:
        with open(path, encoding="utf-8") as f:
            return json.load(f)
    except (OSError, ValueError):
        return None


def _log_lines(path: str) -> List[Dict[str, str]]:
    """log.jsonl as the worker wrote it so far (a crash can cut its last line short)."""
    found = []
    try:
        with open(path, encoding="utf-8") as f:
            lines = f.read().splitlines()
    except OSError:
        return []
    for line in lines:
        try:
            found.append(json.loads(line))
        except ValueError:
            continue
    return found


def main(argv: List[str]) -> int:
    cell = read_json("cell.json")
    if len(argv) == 2 and argv[0] == "--child":
        found = guarded(cell, lambda case: observe_here(cell, case))
        with open(argv[1], "w", encoding="utf-8") as f:
            json.dump(found, f, default=str)
        return 0
    inline, verbose = "--inline" in argv, "--verbose" in argv
    rest = [a for a in argv if a not in ("--inline", "--verbose")]
    out = rest[1] if len(rest) == 2 and rest[0] == "--json" else None
    if rest and out is None:
        sys.stderr.write("usage: repro.py [--inline] [--verbose] [--json OUT]\n")
        return USAGE
    if verbose and cell["engine"]["family"] != "tensorrt":
        sys.stderr.write(f"repro.py: --verbose is a TensorRT-family build log; {cell['engine']['title']} has none\n")
        return USAGE
    found = observe(cell, inline, verbose)
    code, line = report(cell, found)
    if out:
        with open(out, "w", encoding="utf-8") as f:
            json.dump({"observed": found, "recorded": cell["recorded"], "reproduced": code == REPRODUCED,
                       "could_not_run": code == COULD_NOT_RUN, "line": line}, f, indent=1, default=str)
    return code


if __name__ == "__main__":
    code = main(sys.argv[1:])
    sys.stdout.flush()
    sys.stderr.flush()
    # Skip interpreter teardown: engine objects destroyed in an arbitrary order can crash the
    # process after every result is written, which would read as a crash.
    os._exit(code)
