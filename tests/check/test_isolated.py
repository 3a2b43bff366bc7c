"""A model's preparation in a child process (check.isolated): its value and its exception come back; a child that dies
says how."""

from __future__ import annotations

import os
import signal

import pytest

from check import CheckError
from check.isolated import Crashed, out_of_memory, run_isolated


def _raise(error: BaseException) -> None:
    raise error


def test_the_childs_value_and_exception_come_back_and_its_death_is_crashed():
    assert run_isolated(lambda: os.getpid()) != os.getpid()
    with pytest.raises(CheckError, match="no such model file"):
        run_isolated(lambda: _raise(CheckError("m.onnx: no such model file")))
    with pytest.raises(MemoryError):
        run_isolated(lambda: _raise(MemoryError()))
    with pytest.raises(Crashed) as crashed:
        run_isolated(lambda: os.kill(os.getpid(), signal.SIGABRT))
    assert crashed.value.signal == "SIGABRT"
    with pytest.raises(Crashed, match="exit status 3"):
        run_isolated(lambda: os._exit(3))


def test_an_mmap_refused_is_out_of_memory_and_a_missing_file_is_not():
    assert out_of_memory(MemoryError()) and out_of_memory(OSError(12, "Cannot allocate memory"))
    assert not out_of_memory(OSError(2, "No such file or directory")) and not out_of_memory(ValueError())
