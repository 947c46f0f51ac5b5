"""Which program runs an sglang entry point: the one answer for launches, previews and exports.

sglang has two front doors that take the same flags: `python -m sglang.launch_server` and
the `sglang serve` console script. The script belongs to an interpreter's environment, so
when an interpreter is named by path, `sglang serve` is the script beside it — an `sglang`
found on PATH could be another installation's.
"""

from __future__ import annotations

from pathlib import PurePath
from typing import Literal

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
