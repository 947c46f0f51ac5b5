"""Fixtures for the runs tests: an isolated SGLAUNCH_HOME, and the stand-in server behind a
profile's interpreter (the --apply tests' `wrapper`)."""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from sglaunch.runtime.runs import scan
from sglaunch.runtime.runstop import stop_run
from tests.process.launch.test_apply import wrapper

__all__ = ["dead_pid", "home", "wrapper"]


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    home = tmp_path / "home"
    monkeypatch.setenv("SGLAUNCH_HOME", str(home))
    yield home
    # a server a failed test left running is stopped, but only one its run provably
    # started: these tests also write records that name other people's pids
    for run in scan(home / "data" / "runs", tail=0):
        if run.running:
            stop_run(run, grace=2.0)


@pytest.fixture
def dead_pid() -> int:
    """The pid of a process that has ended (pid_max is large enough that it stays free)."""
    proc = subprocess.Popen(["true"])
    proc.wait()
    return proc.pid
