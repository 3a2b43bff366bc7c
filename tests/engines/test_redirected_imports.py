"""engines.imports: one library's import of a C function pointed at another, in a process of its own.

On the interpreter's own math extension (a shared library that imports libm's cos): after the redirect its cos is
libm's sin, the rest of the process keeps the real one, and a second redirect changes nothing (the pointer no longer
holds cos). On OpenVINO: the adapter's first cell leaves libopenvino's malloc_trim pointed at libc's labs, and nothing
else in the process changes.
"""

from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


def _in_child(code: str) -> dict:
    """Run code in a fresh interpreter with the repository on its path; what it prints as JSON."""
    done = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=120,
                          env={"PYTHONPATH": str(REPO), "PATH": "/usr/bin:/bin"})
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])


REDIRECT_COS = """
import ctypes, ctypes.util, json, math
from engines import imports
libm = ctypes.CDLL(ctypes.util.find_library("m"))
libm.cos.restype, libm.cos.argtypes = ctypes.c_double, (ctypes.c_double,)
sin, cos = (ctypes.cast(f, ctypes.c_void_p).value for f in (libm.sin, libm.cos))
name = math.__file__.rsplit("/", 1)[-1].split(".")[0] + "."
before = imports.target(name, "cos")
first = imports.redirect(name, "cos", sin)
second = imports.redirect(name, "cos", cos)
print(json.dumps({"before_is_cos": before == cos, "after_is_sin": imports.target(name, "cos") == sin,
                  "first": first, "second": second, "cos0": math.cos(0.0), "cos1": math.cos(1.0),
                  "libm_cos0": libm.cos(0.0),
                  "absent": imports.redirect("libnothing-here.so", "cos", sin),
                  "no_such_import": imports.redirect(name, "qdq_no_such_function", sin)}))
"""


def test_a_redirected_import_calls_the_replacement_in_that_library_only():
    assert math.__file__.endswith(".so"), "the interpreter's math module is no shared library to test on"
    seen = _in_child(REDIRECT_COS)
    assert seen["before_is_cos"] and seen["first"] is True and seen["after_is_sin"]
    assert seen["cos0"] == 0.0 and seen["cos1"] == pytest.approx(math.sin(1.0))  # math.cos now runs sin
    assert seen["libm_cos0"] == 1.0  # libm's own cos, called directly, is untouched
    assert seen["second"] is False  # the pointer no longer holds cos: left as it is
    assert seen["absent"] is False and seen["no_such_import"] is False


def test_nothing_is_redirected_on_another_platform(monkeypatch):
    from engines import imports

    monkeypatch.setattr(imports.sys, "platform", "darwin")
    assert imports.redirect("math.", "cos", 1) is False
    assert imports.target("math.", "cos") is None


OPENVINO = """
import ctypes, json
import numpy
import openvino
from engines import imports
from engines.openvino import Adapter
libc = ctypes.CDLL(None)
trim, labs = (ctypes.cast(f, ctypes.c_void_p).value for f in (libc.malloc_trim, libc.labs))
before = imports.target("libopenvino.so", "malloc_trim")
adapter = Adapter()
adapter._shared_core(openvino)
print(json.dumps({"before_is_trim": before == trim, "after_is_labs": imports.target("libopenvino.so", "malloc_trim")
                  == labs, "libc_trim_still": ctypes.cast(libc.malloc_trim, ctypes.c_void_p).value == trim,
                  "numpy_works": float(numpy.ones(3).sum())}))
"""


def test_openvino_compiled_models_no_longer_trim_the_heap():
    pytest.importorskip("openvino")
    seen = _in_child(OPENVINO)
    assert seen == {"before_is_trim": True, "after_is_labs": True, "libc_trim_still": True, "numpy_works": 3.0}
