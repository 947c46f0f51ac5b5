"""The smaller ones: an empty --name is an error, and a message quoting user input shows
its control characters escaped (a terminal escape in a name must not repaint the screen)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.hostile import LAUNCH, Case, run_case

ESC = "\x1b[2J\x1b[31m"
LINE = f"{LAUNCH} --model-path example:minicpm4-8b"

CASES = [
    Case("empty-name", lambda _t: ["profiles", "import", LINE, "--name", ""], 2, "--name is empty"),
    Case(
        "name-with-newline",
        lambda _t: ["profiles", "import", LINE, "--name", "ok\n"],
        2,
        "invalid profile name 'ok\\n'",
    ),
    Case("show-escape-name", lambda _t: ["profiles", "show", f"a{ESC}b"], 2, "\\x1b[2J"),
    Case(
        "model-path-escape",
        lambda _t: ["check", "--no-oracle", "--model", f"/no/such{ESC}"],
        2,
        "\\x1b[31m",
    ),
    Case("import-source-escape", lambda _t: ["profiles", "import", f"nofile{ESC}\a"], 2, "\\x07"),
    Case(
        "unknown-flag-escape",
        lambda _t: ["check", "--no-oracle", "--model", "example:minicpm4-8b", "--", f"--foo{ESC}"],
        2,
        "\\x1b[2J",
    ),
    Case(
        "config-path-escape",
        lambda _t: [
            "check",
            "--no-oracle",
            "--model",
            "example:minicpm4-8b",
            "--",
            "--config",
            f"x{ESC}.yaml",
        ],
        2,
        "\\x1b[31m",
    ),
    Case(
        "env-pair-newline",
        lambda _t: ["check", "--no-oracle", "--model", "example:minicpm4-8b", "--env", "A=b\nc"],
        2,
        "write NAME=VALUE",
    ),
    Case(
        "env-pair-bad-name",
        lambda _t: ["check", "--no-oracle", "--model", "example:minicpm4-8b", "--env", "A B=1"],
        2,
        "write NAME=VALUE",
    ),
]


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.id)
def test_message_is_one_escaped_line(case: Case, tmp_path: Path) -> None:
    res = run_case(case, tmp_path)
    assert "\x1b" not in res.stderr and "\a" not in res.stderr
