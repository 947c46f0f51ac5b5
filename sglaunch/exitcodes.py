"""The process exit codes of every sglaunch command, in one place."""

from __future__ import annotations

from enum import IntEnum


class ExitCode(IntEnum):
    OK = 0  # ok; warnings allowed
    VALIDATION = 1  # validation errors
    USAGE = 2  # bad usage or input: unreadable model config, corrupt profile, unknown flag
    START_FAILED = 3  # the server failed to start
    DIED = 4  # the server died after it was ready
    INTERRUPTED = 130  # Ctrl-C / SIGINT
