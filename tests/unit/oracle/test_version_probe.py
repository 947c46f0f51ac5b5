"""Which sglang an interpreter has: asked once for a while, and never waited on for long."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from sglaunch.oracle import interpreter


def _fake(tmp_path: Path, body: str) -> tuple[str, Path]:
    log = tmp_path / "runs.log"
    python = tmp_path / "python"
    python.write_text(f"#!/bin/sh\necho run >> {log}\n{body}\n")
    python.chmod(0o755)
    return str(python), log


def test_an_interpreter_is_probed_once_per_while(tmp_path: Path) -> None:
    python, log = _fake(tmp_path, "echo 0.5.23")
    assert interpreter.probe_sglang_version(python) == ("0.5.23", "")
    assert interpreter.probe_sglang_version(python) == ("0.5.23", "")
    assert log.read_text().count("run") == 1


def test_a_changed_interpreter_is_probed_again(tmp_path: Path) -> None:
    python, log = _fake(tmp_path, "echo 0.5.23")
    interpreter.probe_sglang_version(python)
    Path(python).write_text(f"#!/bin/sh\necho run >> {log}\necho 0.5.21\n")
    assert interpreter.probe_sglang_version(python) == ("0.5.21", "")
    assert log.read_text().count("run") == 2


def test_the_answer_expires(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    python, log = _fake(tmp_path, "echo 0.5.23")
    interpreter.probe_sglang_version(python)
    monkeypatch.setattr(interpreter, "PROBE_MEMO_S", 0.0)
    interpreter.probe_sglang_version(python)
    assert log.read_text().count("run") == 2


def test_a_hanging_interpreter_is_given_up_on(tmp_path: Path) -> None:
    python, _ = _fake(tmp_path, "exec sleep 30")
    t0 = time.monotonic()
    version, why = interpreter.probe_sglang_version(python, timeout=1.0)
    assert version is None and why == f"{python} did not answer within 1 s"
    assert time.monotonic() - t0 < 20  # killed at the timeout, not waited for
