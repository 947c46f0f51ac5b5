"""`sglaunch check --fix`: the fixed launch line on stdout, nothing launched."""

from __future__ import annotations

import json
import shlex

import pytest

from sglaunch.cli.main import main

SALA = "example:minicpm-sala"
BASE = ["check", "--model", SALA, "--gpu", "H100x8", "--no-oracle", "--fix"]
SECRET = "sk-checkfix-0123456789abcdef"


def run(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    try:
        rc = main(argv)
    except SystemExit as exc:
        rc = int(exc.code or 0)
    out, err = capsys.readouterr()
    return rc, out, err


def test_prints_the_fixed_line_and_exits_0(capsys: pytest.CaptureFixture[str]) -> None:
    rc, out, err = run(
        [*BASE, "--", "--tp", "2", "--enable-dp-attention", "--dp-size", "2"], capsys
    )
    assert rc == 0
    lines = out.splitlines()
    assert len(lines) == 1  # data only: the line
    words = shlex.split(lines[0], comments=True)
    assert words[:3] == ["python", "-m", "sglang.launch_server"]
    assert "--enable-dp-attention" not in words and "--dp-size" not in words
    assert words[words.index("--tp-size") + 1] == "2"
    assert "fixed minicpm-dp-attention" in err  # what changed goes to stderr


def test_fixes_in_rounds_until_none_is_left(capsys: pytest.CaptureFixture[str]) -> None:
    # two errors with fixes at once: each gets its fix, and the line then passes
    rc, out, err = run([*BASE, "--", "--tp-size", "3", "--context-length", "99999999"], capsys)
    assert rc == 0
    words = shlex.split(out, comments=True)
    assert words[words.index("--tp-size") + 1] != "3"
    assert words[words.index("--context-length") + 1] == "131072"
    assert "fixed heads-divide-tp" in err and "fixed context-length-exceeds-model" in err


def test_errors_no_fix_resolves_exit_1(capsys: pytest.CaptureFixture[str]) -> None:
    rc, out, err = run([*BASE, "--", "--pp-size", "16"], capsys)
    assert rc == 1
    assert "--pp-size 16" in out  # still the line, as it stands
    assert "1 error left that no fix resolves" in err


def test_json_has_the_fixed_argv_and_its_findings(capsys: pytest.CaptureFixture[str]) -> None:
    rc, out, err = run(
        [*BASE, "--json", "--", "--tp", "2", "--enable-dp-attention", "--dp-size", "2",
         "--api-key", SECRET],
        capsys,
    )  # fmt: skip
    assert rc == 0
    data = json.loads(out)
    assert data["ok"] is True
    argv = data["fixed_argv"]
    assert argv[argv.index("--tp-size") + 1] == "2"
    assert "--enable-dp-attention" not in argv
    assert [f["code"] for f in data["fixes"]] == ["minicpm-dp-attention"]
    assert "minicpm-dp-attention" not in [f["code"] for f in data["findings"]]
    assert data["fixed_line"].startswith("python -m sglang.launch_server")
    assert SECRET not in out and SECRET not in err  # secrets stay masked
    assert argv[argv.index("--api-key") + 1] == "****"


def test_secret_masked_in_the_line(capsys: pytest.CaptureFixture[str]) -> None:
    rc, out, err = run([*BASE, "--", "--tp-size", "3", "--api-key", SECRET], capsys)
    assert rc == 0
    assert SECRET not in out and SECRET not in err
    assert "--api-key '****'" in out


def test_nothing_to_fix_prints_the_line_unchanged(capsys: pytest.CaptureFixture[str]) -> None:
    rc, out, err = run([*BASE, "--", "--tp-size", "2"], capsys)
    assert rc == 0
    assert "--tp-size 2" in out
    assert "nothing to fix" in err


def test_a_value_sglang_refuses_is_fixed_first(capsys: pytest.CaptureFixture[str]) -> None:
    rc, out, err = run(
        [*BASE, "--", "--kv-cache-dtype", "fp8_e4m", "--tp", "2", "--enable-dp-attention",
         "--dp-size", "2"],
        capsys,
    )  # fmt: skip
    assert rc == 0
    words = shlex.split(out, comments=True)
    assert words[words.index("--kv-cache-dtype") + 1] == "fp8_e4m3"
    assert "--enable-dp-attention" not in words
    assert "fixed invalid-flag-value" in err and "fixed minicpm-dp-attention" in err


def test_an_unknown_flag_has_no_fix_and_stays_a_usage_error(
    capsys: pytest.CaptureFixture[str],
) -> None:
    rc, out, err = run([*BASE, "--", "--tp-sze", "2"], capsys)
    assert rc == 2
    assert out == ""
    assert "did you mean --tp-size" in err
