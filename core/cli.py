"""The argument parser every command line of the suite builds: a usage error is one line.

argparse prints its whole usage block before the error, so a mistyped flag of a command with twenty options buries
the one line that says what is wrong. Here a usage error is "prog: error: message (see --help)" on stderr and exit
status 2, nothing run; --help still prints everything. Standard library only (engines.pins and the GPU tools run it
on a bare Python).
"""

from __future__ import annotations

import argparse
from typing import NoReturn

EXIT_USAGE = 2


class ArgumentParser(argparse.ArgumentParser):
    """argparse.ArgumentParser whose usage errors (bad flags and values, parser.error) are one line; its
    subcommands' parsers are of this class too."""

    def error(self, message: str) -> NoReturn:
        self.exit(EXIT_USAGE, f"{self.prog}: error: {one_line(message)} (see --help)\n")


def one_line(message: str) -> str:
    """A message on one line: its line breaks and runs of spaces as single spaces."""
    return " ".join(str(message).split())
