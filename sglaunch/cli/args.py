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
        from sglaunch.safeio import escape_controls
        from sglaunch.secrets import mask_text

        # argparse quotes what it did not recognize: a secret typed in the wrong place,
        # or a newline or terminal escape; the message shows the flag, never the value
        message = escape_controls(mask_text(message))
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
    from sglaunch.safeio import has_control, shown
    from sglaunch.secrets import ENV_NAME, mask_argv

    out: dict[str, str] = {}
    for pair in pairs or ():
        k, eq, v = pair.partition("=")
        if not eq or not ENV_NAME.fullmatch(k) or has_control(v):
            raise UserError(
                f"--env {shown(mask_argv([pair])[0], 60)!r}: write NAME=VALUE (a name of letters, "
                "digits and '_', a value on one line), for example --env SGLANG_MINICPM_FORCE_DENSE=1"
            )
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
