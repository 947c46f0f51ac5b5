"""`sglaunch check` when sglang's own check fails: one status line, the built-in verdict still printed."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

SALA = "example:minicpm-sala"
DP = ["--tp", "2", "--enable-dp-attention", "--dp-size", "2"]


def check(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "sglaunch", "check", "--model", SALA, "--gpu", "H100x8", *args],
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "NO_COLOR": "1", **(env or {})},
    )


def fake(tmp_path: Path, body: str) -> str:
    path = tmp_path / "python"
    path.write_text("#!/bin/sh\n" + body + "\n")
    path.chmod(0o755)
    return str(path)


def status_line(stderr: str) -> str:
    [line] = [ln for ln in stderr.splitlines() if "sglang check:" in ln]
    return line.split("sglang check:", 1)[1].strip()


def assert_builtin_verdict_kept(res: subprocess.CompletedProcess[str]) -> None:
    assert res.returncode == 1  # the built-in tier still decides
    assert "MiniCPM does not support DP attention" in res.stderr
    assert "Traceback" not in res.stderr


def test_sglang_not_installed(tmp_path: Path) -> None:
    res = check("--sglang-python", fake(tmp_path, f'exec "{sys.executable}" "$@"'), "--", *DP)
    assert_builtin_verdict_kept(res)
    assert status_line(res.stderr).startswith("unavailable: sglang is not installed in ")


def test_missing_interpreter(tmp_path: Path) -> None:
    # named on the command line: a usage error, one line, before any check
    res = check("--sglang-python", str(tmp_path / "nope"), "--", *DP)
    assert res.returncode == 2
    assert len(res.stderr.strip().splitlines()) == 1 and "no such file" in res.stderr
    # from the environment: the built-in tier goes on and the status says why sglang's could not
    res = check("--", *DP, env={"SGLAUNCH_SGLANG_PYTHON": str(tmp_path / "nope")})
    assert_builtin_verdict_kept(res)
    assert "no such file" in status_line(res.stderr)


def test_a_release_before_the_range(tmp_path: Path) -> None:
    hello = '{"event": "hello", "protocol": 1, "sglang_version": "0.5.18"}'
    res = check("--sglang-python", fake(tmp_path, f"echo '{hello}'; sleep 30"), "--", *DP)
    assert_builtin_verdict_kept(res)
    assert status_line(res.stderr).startswith(
        "unavailable: sglang 0.5.18 found; the sglang check needs sglang 0.5.19 or later"
    )


def test_a_hanging_resolution(tmp_path: Path) -> None:
    python = os.environ.get("SGLAUNCH_SGLANG_PYTHON")
    if not python:
        pytest.fail("SGLAUNCH_SGLANG_PYTHON is not set: run the README's test command (make test)")
    # the oracle's test hook: the request's environment asks the resolving child to hang
    res = check("--oracle-timeout", "3", "--env", "SGLAUNCH_ORACLE_TEST_HANG=1", "--", *DP)
    assert_builtin_verdict_kept(res)
    line = status_line(res.stderr)
    assert line.startswith("unavailable:") and "\n" not in line
