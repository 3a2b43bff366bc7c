"""check/run.py: the cell session's progress lines reach the user as they come, and a failed session's tail is kept."""

from __future__ import annotations

import os
import sys

from check.run import TAIL_LINES, stream


def test_progress_lines_are_shown_as_they_come_and_the_rest_is_kept_for_an_error(capsys):
    script = ("import sys\n"
              "print('[cells] user_model/net-0123456789 on TensorRT 8.6.0: running for 15 s', flush=True)\n"
              "for i in range(40): print(f'line {i}', flush=True)\n"
              "sys.stderr.write('[cells] user_model/net-0123456789 on TensorRT 8.6.0: pass after 31 s\\n')\n"
              "sys.exit(3)\n")
    status, tail = stream([sys.executable, "-c", script], dict(os.environ))
    shown = capsys.readouterr().out.splitlines()
    assert shown == ["  user_model/net-0123456789 on TensorRT 8.6.0: running for 15 s",
                     "  user_model/net-0123456789 on TensorRT 8.6.0: pass after 31 s"]
    assert status == 3 and len(tail) == TAIL_LINES and tail[-2] == "line 39"
