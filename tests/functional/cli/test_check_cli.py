"""`sglaunch check` and `sglaunch explain` as a user runs them: output streams, JSON, exit codes."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from sglaunch.cli.main import main
from tests.conftest import model_dir

SALA = "example:minicpm-sala"


def run(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    try:
        rc = main(argv)
    except SystemExit as exc:  # argparse usage errors exit from inside the parser
        rc = int(exc.code or 0)
    out, err = capsys.readouterr()
    return rc, out, err


def test_dp_attention_error_exit_1(capsys: pytest.CaptureFixture[str]) -> None:
    rc, out, err = run(
        [
            "check",
            "--model",
            SALA,
            "--gpu",
            "H100x8",
            "--no-oracle",
            "--",
            "--tp",
            "2",
            "--enable-dp-attention",
            "--dp-size",
            "2",
        ],
        capsys,
    )
    assert rc == 1
    assert out == ""  # findings go to stderr; stdout carries data only
    assert "MiniCPM does not support DP attention" in err
    assert "minicpm-dp-attention" in err


def test_ok_exit_0_with_overrides(capsys: pytest.CaptureFixture[str]) -> None:
    rc, _out, err = run(
        ["check", "--model", SALA, "--gpu", "B200x8", "--no-oracle", "--", "--tp-size", "2"], capsys
    )
    assert rc == 0
    assert "attention_backend=minicpm_flashinfer" in err


def test_json_shape(capsys: pytest.CaptureFixture[str]) -> None:
    rc, out, _err = run(
        [
            "check",
            "--model",
            SALA,
            "--gpu",
            "H100x8",
            "--no-oracle",
            "--json",
            "--",
            "--enable-dp-attention",
            "--dp-size",
            "4",
            "--tp=4",
        ],
        capsys,
    )
    assert rc == 1
    data = json.loads(out)
    assert set(data) >= {
        "ok",
        "sglang_version",
        "gpu",
        "model",
        "findings",
        "resolved",
        "changed",
        "argv",
    }
    assert data["ok"] is False
    assert data["resolved"] is None and data["changed"] is None  # no oracle ran
    f = next(f for f in data["findings"] if f["code"] == "minicpm-dp-attention")
    assert f["severity"] == "error"
    assert f["source"] == "builtin"
    assert set(f["fixes"][0]) == {"label", "set", "unset"}
    assert "enable_dp_attention" in f["fixes"][0]["unset"]
    assert data["gpu"]["count"] == 8 and data["gpu"]["devices"][0]["capability"] == "9.0"
    assert data["model"]["has_minicpm_sparse_attention"] is True
    assert data["argv"][:2] == ["--model-path", str(Path(data["argv"][1]))]
    assert {f["severity"] for f in data["findings"]} <= {"error", "warning", "override", "info"}


def test_pasted_launch_line_after_double_dash(capsys: pytest.CaptureFixture[str]) -> None:
    line = [
        "python3",
        "-m",
        "sglang.launch_server",
        "--model-path",
        str(model_dir("sala-sparse")),
        "--tp",
        "4",
        "--enable-dp-attention",
        "--dp-size",
        "4",
    ]
    rc, _out, err = run(["check", "--gpu", "H100x8", "--no-oracle", "--", *line], capsys)
    assert rc == 1
    assert "MiniCPM does not support DP attention" in err


def test_env_flag(capsys: pytest.CaptureFixture[str]) -> None:
    rc, _out, err = run(
        [
            "check",
            "--model",
            SALA,
            "--gpu",
            "H100x8",
            "--no-oracle",
            "--env",
            "SGLANG_MINICPM_FORCE_DENSE=1",
            "--",
            "--attention-backend",
            "minicpm_flashattn",
        ],
        capsys,
    )
    assert rc == 0
    assert "attention_backend=fa3" in err


def test_flag_errors_are_one_line_each(capsys: pytest.CaptureFixture[str]) -> None:
    rc, out, err = run(
        ["check", "--model", SALA, "--no-oracle", "--", "--tpp", "2", "--dp-size", "x"], capsys
    )
    assert rc == 2 and out == ""
    lines = err.strip().splitlines()
    assert len(lines) == 2
    assert all(line.startswith("sglaunch: ") for line in lines)
    assert any("invalid int value: 'x'" in line for line in lines)


def test_unknown_flag_exit_2(capsys: pytest.CaptureFixture[str]) -> None:
    rc, _out, err = run(
        [
            "check",
            "--model",
            SALA,
            "--gpu",
            "H100x8",
            "--no-oracle",
            "--",
            "--tensor-paralel-size",
            "2",
        ],
        capsys,
    )
    assert rc == 2
    assert "unrecognized arguments: --tensor-paralel-size" in err
    assert "--tensor-parallel-size" in err  # did-you-mean


def test_non_numeric_tp_exit_2(capsys: pytest.CaptureFixture[str]) -> None:
    rc, _out, err = run(
        ["check", "--model", SALA, "--gpu", "H100x8", "--no-oracle", "--", "--tp-size", "two"],
        capsys,
    )
    assert rc == 2
    assert "invalid int value: 'two'" in err


@pytest.mark.parametrize(
    ("argv", "words"),
    [
        (["check", "--model", "/no/such/dir", "--no-oracle"], "does not exist"),
        (["check", "--no-oracle", "--", "--tp", "2"], "no model"),
        (["check", "--model", SALA, "--gpu", "H1000x8", "--no-oracle"], "unknown GPU"),
        (["check", "--model", SALA, "--env", "NOEQUALS", "--no-oracle"], "NAME=VALUE"),
        (["check", "--model", SALA, "--tp-size", "2"], "unrecognized arguments"),
        (["explain"], "explain what"),
        (["explain", "no-such-code-xyz"], "no explanation"),
        (["--fix"], "--fix goes with --apply"),
        (["check", "--model", SALA, "--sglang-python", "/no/such/python"], "no such file"),
        (["--profile", "p", "--apply", "--sglang-python", "/no/such/python"], "no such file"),
        (["oracle", "status", "--sglang-python", "/no/such/python"], "no such file"),
        (["check", "--model", SALA, "--sglang-python", "/"], "not an executable file"),
        # the TUI never starts for a profile that is not there
        (["--profile", "no-such-profile"], "no profile named 'no-such-profile'"),
    ],
)
def test_bad_usage_one_line_exit_2(
    argv: list[str],
    words: str,
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("SGLAUNCH_HOME", str(tmp_path))
    rc, _out, err = run(argv, capsys)
    assert rc == 2
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1, err
    assert words in lines[0]
    assert "Traceback" not in err


def test_parser_errors_are_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    rc, _, err = run(["check", "--oracle-timeout", "soon"], capsys)
    assert rc == 2
    assert len(err.strip().splitlines()) == 1
    assert "invalid float value" in err


def test_explain_code_and_message(capsys: pytest.CaptureFixture[str]) -> None:
    rc, out, _err = run(["explain", "minicpm-dp-attention"], capsys)
    assert rc == 0
    assert "What it means" in out and "When it happens" in out and "How to fix it" in out
    assert "before:" in out and "after:" in out
    rc, out2, _ = run(["explain", "ValueError: MiniCPM does not support DP attention"], capsys)
    assert rc == 0 and out2 == out


def test_explain_for_a_release(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("SGLAUNCH_SGLANG_PYTHON", raising=False)  # none installed: the named wins
    rc, out, _ = run(["explain", "minicpm-dp-attention"], capsys)
    assert rc == 0 and "minicpm.py:18" in out and "for sglang 0.5.23 (default)" in out
    # 0.5.20's provider has the same statement three lines lower (scripts/sglang_lines.py)
    rc, out, _ = run(["explain", "--sglang-version", "0.5.20", "minicpm-dp-attention"], capsys)
    assert rc == 0 and "minicpm.py:21" in out and "for sglang 0.5.20 (named)" in out
    assert "has no such check" not in out
    rc, out, _ = run(["explain", "--json", "--sglang-version", "0.5.20", "dp-with-attn-dp"], capsys)
    data = json.loads(out)
    assert data["for"]["checked_for"] == "0.5.20"
    assert data["absent_in_release"] == (
        "sglang 0.5.20 has no such check: it exists in 0.5.22 and later"
    )


def test_explain_json(capsys: pytest.CaptureFixture[str]) -> None:
    _rc, out, _ = run(
        ["explain", "--json", "MiniCPM sparse attention does not support PD disaggregation"], capsys
    )
    card = json.loads(out)
    assert card["code"] == "minicpm-sparse-pd-disaggregation"
    assert card["solutions"] and card["example"]["before"] and card["related"]


def test_explain_list(capsys: pytest.CaptureFixture[str]) -> None:
    rc, out, _ = run(["explain", "--list"], capsys)
    assert rc == 0
    assert "minicpm-dp-attention" in out and "unknown-flag" in out


def test_no_traceback_as_a_process(tmp_path: Path) -> None:
    (tmp_path / "config.json").write_text("{not json")
    res = subprocess.run(
        [sys.executable, "-m", "sglaunch", "check", "--model", str(tmp_path), "--no-oracle"],
        capture_output=True,
        text=True,
    )
    assert res.returncode == 2
    assert res.stdout == ""
    assert res.stderr.startswith("sglaunch: ") and "not valid JSON" in res.stderr
    assert "Traceback" not in res.stderr
    assert len(res.stderr.strip().splitlines()) == 1


def test_flags_from_a_config_file_are_checked(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    config = tmp_path / "launch.yaml"
    config.write_text("tp-size: 3\n")  # 32 heads do not divide by 3
    rc, _out, err = run(
        ["check", "--model", SALA, "--no-oracle", "--", "--config", str(config)], capsys
    )
    assert rc == 1
    assert "heads-divide-tp" in err
    rc, _out, err = run(
        ["check", "--model", SALA, "--no-oracle", "--", "--config", str(tmp_path / "nope.yaml")],
        capsys,
    )
    assert rc == 2 and "Config file not found" in err


def test_an_unexpandable_home_is_one_line(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SGLAUNCH_HOME", "~no-such-user-here/x")
    rc, _out, err = run(["profiles", "list"], capsys)
    assert rc == 2
    assert err.strip().splitlines() == [
        "sglaunch: SGLAUNCH_HOME=~no-such-user-here/x: cannot expand '~' there; give a full path"
    ]
