"""The one exception type for a user's mistake: it carries a one-line message and an exit code."""

from __future__ import annotations

from sglaunch.exitcodes import ExitCode


class UserError(Exception):
    """Bad input from the user: shown as one line, never as a traceback."""

    def __init__(self, message: str, code: ExitCode = ExitCode.USAGE) -> None:
        super().__init__(message)
        self.message = message
        self.code = code

    def __str__(self) -> str:
        return self.message
