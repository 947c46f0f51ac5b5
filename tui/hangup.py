"""The terminal going away: a closed window, a dropped SSH session, `tmux kill-server`.

Nobody is left to answer a question then, and Textual's input thread does not notice: a
hung-up terminal reads as end-of-file at once, every time, and the app spins a core
forever with its server still running. The App watches for it (SIGHUP, and the terminal
no longer being one) and ends the way quitting does, stopping a server it owns.
"""

from __future__ import annotations

import os
import sys

CHECK_EVERY_S = 1.0


def terminal_fd() -> int | None:
    """The file descriptor Textual reads keys from, when it is a terminal."""
    stream = sys.__stdin__
    if stream is None:
        return None
    try:
        fd = stream.fileno()
    except (OSError, ValueError):
        return None
    return fd if os.isatty(fd) else None


def terminal_gone(fd: int) -> bool:
    """A hung-up terminal is no longer a terminal (its reads return end-of-file)."""
    return not os.isatty(fd)


def exit_now(code: int) -> None:
    """End the process at once (tests replace this)."""
    os._exit(code)
