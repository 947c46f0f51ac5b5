"""The interpreter whose sglang gave the verdict is the one that launches, and `--apply`
says which Python runs the server before it starts it."""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from sglaunch.profiles import Profile, ProfileStore
from sglaunch.program import LaunchPython, choose_launch_python, launch_python_facts
from tests.process.launch.test_apply import detached_pid, stop_detached
from tests.support.oracle_models import fake_python
from tests.support.processes import FAKE, free_tcp_port

NO_CHECK = ("--no-oracle", "--gpu", "H100x1")
SERVE = f'  -m) shift 2; exec {shlex.quote(sys.executable)} {shlex.quote(str(FAKE))} "$@";;\n'


def interpreter(folder: Path, sglang: str | None) -> str:
    """A Python whose sglang is `sglang` (None: none installed) that serves the stand-in."""
    version = shlex.quote(sglang or "")
    body = f'case "$1" in\n  -c) echo {version};;\n{SERVE}  *) exit 1;;\nesac'
    folder.mkdir(parents=True, exist_ok=True)
    return fake_python(folder, "python", body)


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    home = tmp_path / "home"
    monkeypatch.setenv("SGLAUNCH_HOME", str(home))
    return home


def apply(home: Path, name: str) -> subprocess.CompletedProcess[str]:
    env = {
        **os.environ,
        "SGLAUNCH_HOME": str(home),
        "FAKE_SGLANG_SCENARIO": "ok",
        "FAKE_SGLANG_TIME_SCALE": "0.02",
        "NO_COLOR": "1",
    }
    env.pop("SGLAUNCH_SGLANG_PYTHON", None)  # the oracle finds `oracle setup`'s environment
    return subprocess.run(
        [sys.executable, "-m", "sglaunch", "--profile", name, "--apply", "--detach", *NO_CHECK],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
    )


def launched_command(home: Path) -> list[str]:
    (run,) = (home / "data" / "runs").iterdir()
    data = json.loads((run / "argv.json").read_text())
    return list(data["command"] if isinstance(data, dict) else data)


def test_apply_launches_with_the_interpreter_that_was_checked(home: Path) -> None:
    # what `sglaunch oracle setup` leaves: the only sglang there is, found by the oracle
    managed = interpreter(home / "data" / "sglang-cpu-0.5.23" / "bin", "0.5.23")
    ProfileStore().save(
        Profile(name="sala", model="example:minicpm-sala", flags={"port": free_tcp_port()})
    )
    res = apply(home, "sala")
    assert res.returncode == 0, res.stderr
    stop_detached(detached_pid(res))
    assert f"launch with {managed} (sglang 0.5.23)" in res.stderr
    assert "CPU-only sglang `sglaunch oracle setup` made for checks, not for serving" in (
        res.stderr
    )
    assert launched_command(home)[0] == managed  # never `python` from PATH


def test_apply_warns_when_the_launching_python_has_no_sglang(home: Path, tmp_path: Path) -> None:
    bare = interpreter(tmp_path / "bare", None)
    ProfileStore().save(
        Profile(
            name="bare",
            model="example:minicpm-sala",
            flags={"port": free_tcp_port()},
            sglang_python=bare,
        )
    )
    res = apply(home, "bare")
    stop_detached(detached_pid(res))
    assert f"launch with {bare} (no sglang)" in res.stderr
    assert f"! {bare} has no sglang: the launch will fail" in res.stderr
    assert launched_command(home)[0] == bare


def test_the_rule_prefers_the_launchs_own_then_the_checked_interpreter() -> None:
    assert choose_launch_python("/own/python", "/checked/python") == "/own/python"
    assert choose_launch_python(None, "/checked/python") == "/checked/python"
    assert choose_launch_python(None, None) == "python"
    same = launch_python_facts(None, "/venv/bin/python", checked_version="0.5.23")
    assert same == LaunchPython("/venv/bin/python", "0.5.23", "/venv/bin/python")
    assert same.warnings == []
    other = launch_python_facts("python3", "/venv/bin/python", checked_version="0.5.23")
    assert other.line == "launch with python3 (sglang not checked)"
    assert any("the verdict is /venv/bin/python's sglang" in w for w in other.warnings)
