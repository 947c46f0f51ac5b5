"""argparse with one-line errors, and the `K=V` / `--` helpers the commands share."""

from __future__ import annotations

import argparse
import difflib
import os
import re
import sys
from collections.abc import Sequence
from typing import NoReturn

from sglaunch.errors import UserError
from sglaunch.exitcodes import ExitCode
from sglaunch.flags.argv import _Lookup, one_slip
from sglaunch.flags.schema import bundled_schema
from sglaunch.profiles.profile import MAX_NODES
from sglaunch.safeio import escape_controls, has_control, shown
from sglaunch.secrets import ENV_NAME, mask_argv, mask_text


class Parser(argparse.ArgumentParser):
    """Bad usage is one line on stderr and exit code 2, never a usage dump."""

    def error(self, message: str) -> NoReturn:
        # argparse quotes what it did not recognize: a secret typed in the wrong place,
        # or a newline or terminal escape; the message shows the flag, never the value
        message = escape_controls(mask_text(message))
        hint = self._did_you_mean(message)
        print(f"{self.prog}: error: {message}{hint} (see {self.prog} --help)", file=sys.stderr)
        raise SystemExit(ExitCode.USAGE)

    def _did_you_mean(self, message: str) -> str:
        """` — did you mean --gpu?` for a misspelt option, `'check'` for a command."""
        choice = re.match(r"argument \S+: invalid choice: '([^']*)' \(choose from (.*)\)$", message)
        if choice:
            choices = re.findall(r"'([^']*)'", choice.group(2))
            close = difflib.get_close_matches(choice.group(1), choices, n=1, cutoff=0.6)
            return f" — did you mean {close[0]!r}?" if close else ""
        if not message.startswith("unrecognized arguments: "):
            return ""
        words = message.removeprefix("unrecognized arguments: ").split()
        typed = next((w.split("=", 1)[0] for w in words if w.startswith("--")), None)
        if typed is None:
            return ""
        # `check --model X --tp 2`: sglang's flag, typed before the `--` that starts them
        sglang = _is_sglang_flag(typed) if self.prog in ("sglaunch check", "sglaunch fit") else ""
        if sglang == "exact":
            return self._after_dashes(typed)
        own = [o for o in self._option_string_actions if o.startswith("--")]
        close = _close_options(typed, own)
        if close:
            return f" — did you mean {' or '.join(close)}?"
        return self._after_dashes(typed) if sglang else ""

    def _after_dashes(self, option: str) -> str:
        return f" — {option} is sglang's: its flags go after `--` ({self.prog} … -- {option} …)"


def _is_sglang_flag(option: str) -> str:
    """Whether `option` is one of sglang's flags: "exact", "prefix" (its argparse takes
    it as an abbreviation), or "" (not sglang's)."""
    schema = bundled_schema()
    if option in schema.by_option:
        return "exact"
    spec, _, _, issue = _Lookup(schema).find(option)
    return "prefix" if spec is not None or issue is not None else ""


def _close_options(typed: str, options: Sequence[str]) -> list[str]:
    """Options a typo most likely meant: one typing slip away first, then difflib's."""
    slips = [o for o in options if one_slip(typed, o)]
    if slips:
        # a typing slip is what happened: a merely similar option (--nodes for --modle) is noise
        return slips[:2]
    close = difflib.get_close_matches(typed, options, n=2, cutoff=0.7)
    return close


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
    full = os.path.abspath(os.path.expanduser(value))
    if not os.path.exists(full):
        raise argparse.ArgumentTypeError(f"{value}: no such file (give the python that has sglang)")
    if not (os.path.isfile(full) and os.access(full, os.X_OK)):
        raise argparse.ArgumentTypeError(f"{value}: not an executable file")
    return value


def node_count(value: str) -> int:
    """`--nodes N`: the machines one server spans, each with the --gpu preset or the local GPUs."""
    try:
        n = int(value)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"{value!r} is not a whole number of machines (e.g. --nodes 2)"
        ) from None
    if not 1 <= n <= MAX_NODES:
        raise argparse.ArgumentTypeError(f"{n}: give from 1 to {MAX_NODES} machines")
    return n
