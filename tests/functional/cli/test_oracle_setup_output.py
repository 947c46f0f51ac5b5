"""`sglaunch oracle setup`: one line per step, pip's output only when a step fails, a last line."""

from __future__ import annotations

from pathlib import Path

import pytest

from sglaunch.cli.main import main
from sglaunch.oracle import setup_env

RESOLVER_NOISE = [
    "ERROR: pip's dependency resolver does not currently take into account all the packages "
    "that are installed. This behaviour is the source of the following dependency conflicts.",
    *[f"sglang 0.5.23 requires dep{i}==1.{i}, which is not installed." for i in range(47)],
    "sglang 0.5.23 requires torch==2.14.1, but you have torch 2.13.0+cpu which is incompatible.",
]


class FakePip:
    """Stands in for `execute`: makes the venv's python, answers pip with `output`/`code`."""

    def __init__(self, output: list[str], fail_at: str | None = None) -> None:
        self.output = output
        self.fail_at = fail_at
        self.installed = False
        self.commands: list[list[str]] = []

    def __call__(self, cmd: list[str]) -> tuple[int, str]:
        self.commands.append(cmd)
        if cmd[1:3] == ["-m", "venv"]:
            python = Path(cmd[3]) / "bin" / "python"
            python.parent.mkdir(parents=True)
            python.write_text("#!/bin/sh\n")
            python.chmod(0o755)
            return 0, ""
        if self.fail_at is not None and self.fail_at in cmd:
            return 1, "\n".join(self.output)
        if "-r" in cmd:
            self.installed = True
        return 0, "\n".join(self.output)


def run(
    argv: list[str],
    pip: FakePip,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> tuple[int, str, str]:
    monkeypatch.setattr(setup_env, "execute", pip)
    monkeypatch.setattr(
        setup_env, "ready_version", lambda python: "0.5.23" if pip.installed else None
    )
    try:
        rc = main(argv)
    except SystemExit as exc:
        rc = int(exc.code or 0)
    out, err = capsys.readouterr()
    return rc, out, err


def test_each_step_one_line_and_a_ready_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    env = tmp_path / "env"
    pip = FakePip(RESOLVER_NOISE)
    rc, out, err = run(["oracle", "setup", "--dir", str(env)], pip, monkeypatch, capsys)
    assert rc == 0
    python = env / "bin" / "python"
    assert out == f"{python}\n"  # stdout: the interpreter, for scripts
    lines = err.splitlines()
    assert "requires" not in err and "resolver" not in err  # pip's output stays captured
    assert len(lines) == 6, err  # venv, torch, sglang, its needs, the import check, ready
    assert all(line.startswith("sglaunch: ") for line in lines[:-1])
    assert lines[-1] == (
        f"ready: sglang 0.5.23 at {python} (a CPU build: for checks, not for serving)"
    )


def test_already_set_up_still_ends_with_the_ready_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    env = tmp_path / "env"
    pip = FakePip([])
    pip.installed = True
    (env / "bin").mkdir(parents=True)
    (env / "bin" / "python").write_text("")
    rc, _out, err = run(["oracle", "setup", "--dir", str(env)], pip, monkeypatch, capsys)
    assert rc == 0
    assert pip.commands == []
    assert err.splitlines()[-1].startswith("ready: sglang 0.5.23 at ")


def test_a_failed_step_shows_the_tail_of_its_output(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    output = [f"Looking in indexes: line {i}" for i in range(40)]
    output.append("ERROR: No matching distribution found for torch==2.13.0")
    pip = FakePip(output, fail_at=setup_env.TORCH)
    rc, out, err = run(
        ["oracle", "setup", "--dir", str(tmp_path / "env")], pip, monkeypatch, capsys
    )
    assert rc == 2
    assert out == ""
    lines = err.splitlines()
    assert "ERROR: No matching distribution found for torch==2.13.0" in err
    assert "line 0" not in err  # the tail only
    assert len(lines) <= 2 + setup_env.TAIL_LINES + 1
    assert lines[-1] == (
        f"sglaunch: installing {setup_env.TORCH} failed (exit 1); the end of its output is above"
    )
    assert "ready:" not in err
