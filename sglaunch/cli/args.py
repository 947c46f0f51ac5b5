"""argparse with one-line errors, and the `K=V` / `--` helpers the commands share."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from typing import NoReturn

from sglaunch.errors import UserError
from sglaunch.exitcodes import ExitCode


class Parser(argparse.ArgumentParser):
    """Bad usage is one line on stderr and exit code 2, never a usage dump."""

    def error(self, message: str) -> NoReturn:
        print(f"{self.prog}: error: {message} (see {self.prog} --help)", file=sys.stderr)
        raise SystemExit(ExitCode.USAGE)


def split_double_dash(argv: Sequence[str]) -> tuple[list[str], list[str]]:
    """sglaunch's own options before `--`, sglang's flags after it."""
    argv = list(argv)
    if "--" in argv:
        i = argv.index("--")
        return argv[:i], argv[i + 1 :]
    return argv, []


def parse_env_pairs(pairs: Sequence[str] | None) -> dict[str, str]:
    out: dict[str, str] = {}
    for pair in pairs or ():
        if "=" not in pair or not pair.split("=", 1)[0]:
            raise UserError(
                f"--env {pair!r}: write NAME=VALUE, for example --env SGLANG_MINICPM_FORCE_DENSE=1"
            )
        k, v = pair.split("=", 1)
        out[k] = v
    return out


def interpreter_path(value: str) -> str:
    """`--sglang-python PATH`: a typo is a usage error now, not "sglang check: unavailable"."""
    import os

    full = os.path.abspath(os.path.expanduser(value))
    if not os.path.exists(full):
        raise argparse.ArgumentTypeError(f"{value}: no such file (give the python that has sglang)")
    if not (os.path.isfile(full) and os.access(full, os.X_OK)):
        raise argparse.ArgumentTypeError(f"{value}: not an executable file")
    return value
