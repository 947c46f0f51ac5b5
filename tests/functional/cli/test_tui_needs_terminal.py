"""The TUI refuses, in one line and at once, when stdout or stdin is not a terminal."""

from __future__ import annotations

import os
import pty
import subprocess
import sys
import time
from pathlib import Path

import pytest

REFUSAL = (
    "sglaunch: the TUI needs a terminal ({} is not a tty); "
    "use `sglaunch check …` for headless output"
)


def _sglaunch(
    args: list[str], *, stdin: int, stdout: int, tmp_path: Path
) -> tuple[int, str, float]:
    env = {**os.environ, "SGLAUNCH_HOME": str(tmp_path), "XDG_DATA_HOME": str(tmp_path)}
    t0 = time.monotonic()
    done = subprocess.run(
        [sys.executable, "-m", "sglaunch.cli.main", *args],
        stdin=stdin,
        stdout=stdout,
        stderr=subprocess.PIPE,
        env=env,
        timeout=20,  # the TUI, started by mistake, would wait for keys forever
    )
    return done.returncode, done.stderr.decode(), time.monotonic() - t0


@pytest.mark.parametrize("args", [[], ["--model", "example:minicpm-sala"]])
def test_stdout_to_a_file_is_refused(args: list[str], tmp_path: Path) -> None:
    main, side = pty.openpty()
    try:
        with (tmp_path / "out.txt").open("wb") as out:
            code, err, took = _sglaunch(args, stdin=side, stdout=out.fileno(), tmp_path=tmp_path)
    finally:
        os.close(main)
        os.close(side)
    assert code == 2
    assert err.splitlines() == [REFUSAL.format("stdout")]
    assert (tmp_path / "out.txt").read_bytes() == b""  # no escape codes in the file
    assert took < 30


def test_stdout_to_a_pipe_is_refused(tmp_path: Path) -> None:
    main, side = pty.openpty()
    try:
        code, err, _ = _sglaunch([], stdin=side, stdout=subprocess.PIPE, tmp_path=tmp_path)
    finally:
        os.close(main)
        os.close(side)
    assert code == 2
    assert err.splitlines() == [REFUSAL.format("stdout")]


def test_stdin_not_a_terminal_is_refused(tmp_path: Path) -> None:
    main, side = pty.openpty()
    try:
        code, err, _ = _sglaunch([], stdin=subprocess.DEVNULL, stdout=side, tmp_path=tmp_path)
    finally:
        os.close(main)
        os.close(side)
    assert code == 2
    assert err.splitlines() == [REFUSAL.format("stdin")]
