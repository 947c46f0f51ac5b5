"""Class "bounded read": only regular files are opened, reads stop at a cap counted on the
bytes read, and parsing is bounded (a FIFO blocked forever; /dev/zero filled the memory)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.support.hostile import (
    GOOD_PROFILE,
    Case,
    assert_outcome,
    check,
    model_dir,
    run_case,
    run_cli,
    saved_profile,
)

# A few hundred bytes: nine levels of nine aliases, 9**8 (43 million) numbers once
# expanded, under keys sglang reads (json.dumps of the JSON flag expanded all of them).
ALIAS_BOMB = (
    "cuda-graph-bs-decode: &a [1, 1, 1, 1, 1, 1, 1, 1, 1]\njson-model-override-args:\n"
    + "".join(
        f"  {k}: &{k} [{', '.join([f'*{p}'] * 9)}]\n"
        for p, k in zip("abcdefgh", "bcdefghi", strict=True)
    )
)


def _fifo_config(tmp: Path) -> list[str]:
    d = tmp / "m"
    d.mkdir()
    os.mkfifo(d / "config.json")
    return check(d)


def _fifo_safetensors(tmp: Path) -> list[str]:
    d = model_dir(tmp, "m")
    os.mkfifo(d / "model.safetensors")
    return check(d)


def _fifo_index(tmp: Path) -> list[str]:
    d = model_dir(tmp, "m")
    os.mkfifo(d / "model.safetensors.index.json")
    return check(d)


def _fifo_yaml(tmp: Path) -> list[str]:
    os.mkfifo(tmp / "c.yaml")
    return check("example:minicpm4-8b", "--config", "c.yaml")


def _fifo_profile(tmp: Path) -> list[str]:
    folder = tmp / "home" / "config" / "profiles"
    folder.mkdir(parents=True)
    os.mkfifo(folder / "p.toml")
    return ["profiles", "show", "p"]


def _zero_config(tmp: Path) -> list[str]:
    d = tmp / "m"
    d.mkdir()
    (d / "config.json").symlink_to("/dev/zero")
    return check(d)


def _zero_yaml(tmp: Path) -> list[str]:
    (tmp / "z.yaml").symlink_to("/dev/zero")
    return check("example:minicpm4-8b", "--config", "z.yaml")


def _zero_import(tmp: Path) -> list[str]:
    return ["profiles", "import", "/dev/zero", "--name", "z"]


def _huge_config(tmp: Path) -> list[str]:
    d = tmp / "m"
    d.mkdir()
    with open(d / "config.json", "wb") as fh:  # sparse: 9 MB of zeros, no disk used
        fh.truncate(9 * 1024 * 1024)
    return check(d)


def _huge_profile(tmp: Path) -> list[str]:
    saved_profile(tmp / "home", "p", GOOD_PROFILE + "notes = '" + "n" * (2 * 1024 * 1024) + "'\n")
    return ["profiles", "show", "p"]


def _bomb_config(tmp: Path) -> list[str]:
    (tmp / "bomb.yaml").write_text(ALIAS_BOMB)
    return check("example:minicpm4-8b", "--config", "bomb.yaml")


def _bomb_import(tmp: Path) -> list[str]:
    (tmp / "bomb.yaml").write_text(ALIAS_BOMB)
    return ["profiles", "import", "bomb.yaml"]


def _self_alias(tmp: Path) -> list[str]:
    (tmp / "loop.yaml").write_text("cuda-graph-bs: &a [1, *a]\n")
    return check("example:minicpm4-8b", "--config", "loop.yaml")


CASES = [
    Case("fifo-config-json", _fifo_config, 2, "is a FIFO (named pipe)"),
    Case("fifo-safetensors", _fifo_safetensors, 2, "is a FIFO (named pipe)"),
    Case("fifo-weight-index", _fifo_index, 2, "is a FIFO (named pipe)"),
    Case("fifo-config-yaml", _fifo_yaml, 2, "is a FIFO (named pipe)"),
    Case("fifo-profile", _fifo_profile, 2, "is a FIFO (named pipe)"),
    Case("dev-zero-config-json", _zero_config, 2, "is a character device"),
    Case("dev-zero-config-yaml", _zero_yaml, 2, "is a character device"),
    Case("dev-zero-import", _zero_import, 2, "is a character device"),
    Case("config-json-over-8-mb", _huge_config, 2, "far too large for a model config"),
    Case("profile-over-1-mb", _huge_profile, 2, "far too large for a profile"),
    Case("yaml-alias-bomb-config", _bomb_config, 2, "expands to more than 100000 values"),
    Case("yaml-alias-bomb-import", _bomb_import, 2, "expands to more than 100000 values"),
    Case("yaml-alias-to-itself", _self_alias, 2, "refers to itself"),
]


def test_the_bomb_is_the_issue_s() -> None:
    assert len(ALIAS_BOMB.encode()) <= 534 and ALIAS_BOMB.count("*") == 72


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.id)
def test_read_is_bounded(case: Case, tmp_path: Path) -> None:
    run_case(case, tmp_path)


def test_stdin_import_is_capped(tmp_path: Path) -> None:
    home = tmp_path / "home"
    res = run_cli(["profiles", "import", "-"], home=home, cwd=tmp_path, stdin="x" * (2 << 20))
    assert_outcome(res, 2, "far too large for a profile")


def test_a_fifo_profile_is_listed_as_broken_not_waited_on(tmp_path: Path) -> None:
    home = tmp_path / "home"
    saved_profile(home, "good", GOOD_PROFILE)
    os.mkfifo(home / "config" / "profiles" / "pipe.toml")
    res = run_cli(["profiles", "list"], home=home, cwd=tmp_path)
    assert_outcome(res, 0, "1 profile(s) cannot be read")
    assert "pipe" in res.stdout and "FIFO" in res.stdout and "good" in res.stdout
