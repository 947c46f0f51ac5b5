"""Every output names the sglang release its verdict is for, and where that came from.

`check`'s header and `check --json` for an installed release (stub interpreters
reporting 0.5.21, 0.5.18 and 0.5.10), a named one (`--sglang-version`) and none
(the default); the one plain line for a release outside the range; a flag-schema
read that fails says so instead of falling back silently.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from sglaunch.cli.main import main
from tests.support.stubs import schema_as, stub_sglang

SALA = "example:minicpm-sala"
DP2 = ["--enable-dp-attention", "--dp-size", "2", "--tp-size", "2"]


@pytest.fixture(autouse=True)
def _no_sglang(monkeypatch: pytest.MonkeyPatch) -> None:
    """No real sglang: each test says which interpreter (if any) there is."""
    monkeypatch.delenv("SGLAUNCH_SGLANG_PYTHON", raising=False)


def check(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    try:
        rc = main(["check", "--model", SALA, "--gpu", "H100x8", *args])
    except SystemExit as exc:
        rc = int(exc.code or 0)
    out, err = capsys.readouterr()
    return rc, out, err


def header(err: str) -> str:
    return next(line for line in err.splitlines() if line.startswith("sglaunch check ·"))


@pytest.mark.parametrize(
    ("args", "label", "source", "rules"),
    [
        ([], "sglang 0.5.23 (default)", "default", "0.5.23"),
        (["--sglang-version", "0.5.20"], "sglang 0.5.20 (named)", "named", "0.5.20"),
        (["--sglang-version", "0.5.22"], "sglang 0.5.22 (named)", "named", "0.5.22"),
    ],
)
def test_without_sglang_the_named_or_newest_release(
    capsys: pytest.CaptureFixture[str], args: list[str], label: str, source: str, rules: str
) -> None:
    rc, out, err = check(capsys, "--no-oracle", "--json", *args, "--", "--tp-size", "2")
    assert rc == 0
    assert header(err).endswith(f"· for {label}")
    data = json.loads(out)
    assert data["sglang_version"] is None  # nothing is installed
    assert (data["rules_version"], data["checked_for"], data["version_source"]) == (
        rules,
        rules,
        source,
    )
    assert data["flag_schema"]["sglang_version"] == rules
    assert data["out_of_range"] is None


def test_an_installed_release_wins_and_its_rules_run(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    python = stub_sglang(tmp_path / "s21", "0.5.21", schema=schema_as("0.5.21", tmp_path, "0.5.21"))
    rc, out, err = check(
        capsys, "--sglang-python", python, "--sglang-version", "0.5.23", "--json", "--", *DP2
    )
    assert rc == 1  # MiniCPM rejects DP attention in every release
    assert header(err).endswith("· for sglang 0.5.21 (installed)")
    assert "sglang 0.5.23 was named, but sglang 0.5.21 is installed" in err
    data = json.loads(out)
    assert (data["sglang_version"], data["rules_version"], data["version_source"]) == (
        "0.5.21",
        "0.5.21",
        "installed",
    )
    codes = {f["code"] for f in data["findings"]}
    # 0.5.21 has no --attn-dp-size, so no deprecation (0.5.22+ only)
    assert "minicpm-dp-attention" in codes and "deprecated-dp-attention" not in codes
    dp = next(f for f in data["findings"] if f["code"] == "minicpm-dp-attention")
    assert dp["ref"] == "srt/arg_groups/model_overrides/minicpm.py:18"
    # the oracle accepted 0.5.21 and started it; the stub then dies before "ready"
    assert (
        data["oracle"].startswith("unavailable: ")
        and "exited before the oracle was ready" in data["oracle"]
    )


@pytest.mark.parametrize("version", ["0.5.18", "0.5.10"])
def test_an_installed_release_before_the_range_gets_one_plain_line(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, version: str
) -> None:
    python = stub_sglang(tmp_path / version, version, schema=schema_as(version, tmp_path))
    rc, out, err = check(capsys, "--sglang-python", python, "--json", "--", *DP2)
    assert header(err).endswith(f"· for sglang {version} (installed)")
    [line] = [ln for ln in err.splitlines() if ln.startswith(f"! sglang {version} is older")]
    assert "the flag checks use sglang " + version + "'s own flags" in line
    assert "the general rules run as in 0.5.19" in line
    assert f"the MiniCPM rules do not exist in sglang {version}" in line
    assert "needs sglang 0.5.19 or later" in line
    data = json.loads(out)
    assert (data["sglang_version"], data["rules_version"], data["checked_for"]) == (
        version,
        "0.5.19",
        version,
    )
    assert data["out_of_range"] == line[2:]
    codes = {f["code"] for f in data["findings"]}
    assert not {c for c in codes if c.startswith("minicpm")}, codes
    # the oracle is refused in words, not started
    assert data["oracle"] == (
        f"unavailable: sglang {version} found; the sglang check needs sglang 0.5.19 or later "
        "(sglaunch mirrors 0.5.19–0.5.23): before 0.5.19 sglang has no resolution pipeline to ask"
    )
    assert rc == 0  # the general rules hold and find nothing wrong here


def test_a_release_after_the_range_is_checked_with_the_newest_rules(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    python = stub_sglang(tmp_path / "s24", "0.5.24", schema=schema_as("0.5.24", tmp_path, "0.5.23"))
    rc, out, err = check(capsys, "--sglang-python", python, "--json", "--", *DP2)
    assert rc == 1
    assert "! sglang 0.5.24 is newer than the releases sglaunch mirrors" in err
    data = json.loads(out)
    assert (data["sglang_version"], data["rules_version"]) == ("0.5.24", "0.5.23")
    assert "minicpm-dp-attention" in {f["code"] for f in data["findings"]}


def test_a_schema_read_that_fails_says_so(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    python = stub_sglang(tmp_path / "broken", "0.5.20")  # extract_flags.py fails
    _rc, out, err = check(capsys, "--sglang-python", python, "--json", "--", "--tp-size", "2")
    [line] = [ln for ln in err.splitlines() if "reading sglang's flags failed" in ln]
    assert line == (
        "! reading sglang's flags failed: ImportError: cannot import name resolve_once; "
        "checking sglang 0.5.20's launch against the bundled sglang 0.5.20 schema instead"
    )
    data = json.loads(out)
    assert data["flag_schema"]["failed"] is True
    assert data["flag_schema"]["sglang_version"] == "0.5.20"
    assert data["sglang_version"] == "0.5.20"


def test_a_named_release_outside_the_range_is_a_usage_error(
    capsys: pytest.CaptureFixture[str],
) -> None:
    rc, out, err = check(capsys, "--no-oracle", "--sglang-version", "0.5.18")
    assert rc == 2 and out == ""
    assert err.strip() == (
        "sglaunch: --sglang-version 0.5.18: sglaunch has rules for sglang 0.5.19–0.5.23; name one "
        "of 0.5.19, 0.5.20, 0.5.21, 0.5.22, 0.5.23 (an installed sglang's own version is used "
        "whatever is named)"
    )


def test_a_flag_the_release_lacks_is_unknown_there(capsys: pytest.CaptureFixture[str]) -> None:
    rc, _out, err = check(
        capsys, "--no-oracle", "--sglang-version", "0.5.21", "--", "--attn-dp-size", "2"
    )
    assert rc == 2
    assert "unrecognized arguments: --attn-dp-size 2" in err
