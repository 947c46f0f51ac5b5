"""Which program runs an sglang entry point: the one answer for launches, previews and exports.

sglang has two front doors that take the same flags: `python -m sglang.launch_server` and
the `sglang serve` console script. The script belongs to an interpreter's environment, so
when an interpreter is named by path, `sglang serve` is the script beside it — an `sglang`
found on PATH could be another installation's.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import PurePath
from typing import Literal

from sglaunch.paths import data_dir

Entry = Literal["launch_server", "serve"]
ENTRIES: tuple[Entry, ...] = ("launch_server", "serve")
LAUNCH_SERVER: Entry = "launch_server"
SERVE: Entry = "serve"
DEFAULT_PYTHON = "python"


def as_entry(text: str) -> Entry:
    """The entry named `text`; anything but "serve" is launch_server (sglang's default door)."""
    return SERVE if text == SERVE else LAUNCH_SERVER


def program_argv(entry: str, python: str | None) -> list[str]:
    """The tokens before sglang's flags for `entry` run by `python` (None: plain `python`)."""
    if entry == SERVE:
        if python and "/" in python:
            return [str(PurePath(python).parent / "sglang"), "serve"]
        return ["sglang", "serve"]
    return [python or DEFAULT_PYTHON, "-m", "sglang.launch_server"]


def program_length(entry: str) -> int:
    """How many tokens `program_argv` puts before the flags."""
    return 2 if entry == SERVE else 3


# --- which interpreter launches ------------------------------------------------------------
#
# One rule for `--apply`, the TUI and the preview: the launch's own interpreter (a profile's
# `sglang_python`, `--sglang-python`, a pasted line's), else the one whose sglang gave the
# verdict (the oracle's), else plain `python` from PATH. Never a silent `python` while the
# verdict came from another interpreter's sglang.

MANAGED_ENV_PREFIX = "sglang-cpu-"  # `sglaunch oracle setup`'s folders (oracle/interpreter.py)


def choose_launch_python(own: str | None, checked: str | None) -> str:
    """The interpreter that runs the server: `own` (the launch's), else `checked` (the
    oracle's), else `python` from PATH."""
    return own or checked or DEFAULT_PYTHON


def same_python(a: str | None, b: str | None) -> bool:
    if not a or not b:
        return False
    return os.path.abspath(os.path.expanduser(a)) == os.path.abspath(os.path.expanduser(b))


def is_oracle_env(python: str | None) -> bool:
    """Whether `python` is a CPU-only sglang that `sglaunch oracle setup` made (for checks,
    not for serving): DATA_DIR/sglang-cpu-V/bin/python."""
    if not python or "/" not in python:
        return False

    env_dir = PurePath(os.path.abspath(os.path.expanduser(python))).parent.parent
    try:
        base = os.path.abspath(data_dir())
    except Exception:  # an unusable SGLAUNCH_HOME is reported where it is used
        return False
    return env_dir.name.startswith(MANAGED_ENV_PREFIX) and str(env_dir.parent) == base


@dataclass(frozen=True)
class LaunchPython:
    """Which Python will run the server, and what is known of its sglang: said before a launch."""

    path: str
    sglang_version: str | None  # sglang installed in `path`; None: none there, or not known
    checked: str | None = None  # the interpreter whose sglang gave the verdict (None: none)
    known: bool = True  # False: `path` was not asked (so sglang_version says nothing)

    @property
    def oracle_env(self) -> bool:
        return is_oracle_env(self.path)

    @property
    def line(self) -> str:
        if self.sglang_version:
            what = f"sglang {self.sglang_version}"
        elif self.known:
            what = "no sglang"
        else:
            what = "sglang not checked"
        return f"launch with {self.path} ({what})"

    @property
    def warnings(self) -> list[str]:
        """What may make the launch differ from the verdict, or fail: one line each."""
        out: list[str] = []
        way_out = "pass --sglang-python PATH (an interpreter with sglang and CUDA)"
        if self.known and not self.sglang_version:
            out.append(
                f"{self.path} has no sglang: the launch will fail "
                f'("sglang is not installed for this Python"); {way_out}'
            )
        if self.checked is None:
            if not self.known:
                out.append(
                    f"no interpreter with sglang was found to check with: {self.path} "
                    f"runs the server unchecked; {way_out}"
                )
        elif not same_python(self.checked, self.path):
            out.append(
                f"the verdict is {self.checked}'s sglang, but {self.path} runs the server: "
                "the checks may not hold for it"
            )
        if self.oracle_env:
            out.append(
                f"{self.path} is the CPU-only sglang `sglaunch oracle setup` made for checks, "
                f"not for serving; {way_out}"
            )
        return out

    @property
    def concern(self) -> str | None:
        """The first warning in a few words (a title bar's), or None."""
        if self.known and not self.sglang_version:
            return f"{self.path} has no sglang"
        if self.checked is None and not self.known:
            return "no sglang found to launch with"
        if self.checked is not None and not same_python(self.checked, self.path):
            return "the launch runs another Python than the one checked"
        if self.oracle_env:
            return "the launch Python is oracle setup's CPU-only sglang"
        return None


def launch_python_facts(
    own: str | None,
    checked: str | None,
    *,
    checked_version: str | None = None,
    probe: Callable[[str], str | None] | None = None,
) -> LaunchPython:
    """The launch interpreter by the rule, with its sglang: `checked_version` when it is the
    checked interpreter, else `probe(path)` (None: not asked, the version stays unknown)."""
    path = choose_launch_python(own, checked)
    if same_python(path, checked) and checked_version is not None:
        return LaunchPython(path, checked_version, checked)
    if probe is not None:
        return LaunchPython(path, probe(path), checked)
    return LaunchPython(path, None, checked, known=False)
