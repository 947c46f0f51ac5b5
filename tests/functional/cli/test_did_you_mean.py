"""A mistyped command or option is one line naming what was most likely meant, exit 2."""

from __future__ import annotations

from pathlib import Path

import pytest

from sglaunch.cli.main import main


def run(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    try:
        rc = main(argv)
    except SystemExit as exc:  # argparse usage errors exit from inside the parser
        rc = int(exc.code or 0)
    out, err = capsys.readouterr()
    assert out == ""
    return rc, err


@pytest.mark.parametrize(
    ("argv", "hint"),
    [
        (["chek"], "did you mean 'check'?"),
        (["profils", "list"], "did you mean 'profiles'?"),
        (["oracel", "status"], "did you mean 'oracle'?"),
        (["check", "--gpus", "H100x8"], "did you mean --gpu?"),
        (["check", "--jsn"], "did you mean --json?"),
        (["fit", "--modle", "example:minicpm-sala"], "did you mean --model?"),
        (["--modle", "example:minicpm-sala"], "did you mean --model?"),
        (["oracle", "stup"], "did you mean 'setup'?"),
        (["profiles", "lst"], "did you mean 'list'?"),
        # sglang's flags typed before the `--` that starts them
        (["check", "--model", "m", "--tp", "2"], "--tp is sglang's: its flags go after `--`"),
        (["check", "--model", "m", "--model-path", "x"], "--model-path is sglang's"),
        (["fit", "--model", "m", "--mem-fraction-static", "0.8"], "its flags go after `--`"),
    ],
)
def test_one_line_with_the_likely_spelling(
    argv: list[str],
    hint: str,
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("SGLAUNCH_HOME", str(tmp_path))
    rc, err = run(argv, capsys)
    assert rc == 2
    assert len(err.strip().splitlines()) == 1, err
    assert hint in err


def test_an_unknown_word_lists_the_commands(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SGLAUNCH_HOME", str(tmp_path))
    rc, err = run(["xyzzy"], capsys)
    assert rc == 2
    assert err.strip().splitlines() == [
        "sglaunch: unknown command 'xyzzy' (commands: check, fit, doctor, explain, profiles, oracle, "
        "attach, runs; see sglaunch --help)"
    ]


def test_nothing_close_gives_no_guess(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SGLAUNCH_HOME", str(tmp_path))
    rc, err = run(["check", "--zzzzzz"], capsys)
    assert rc == 2
    assert "did you mean" not in err and "unrecognized arguments: --zzzzzz" in err
