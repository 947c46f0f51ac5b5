"""`--apply` re-validates a profile with the installed sglang and says what changed since
the release the profile was validated with."""

from __future__ import annotations

import os
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path

from sglaunch.profiles import Profile, ProfileStore
from sglaunch.profiles.profile import Validated
from tests.support.stubs import stub_sglang


def _apply(home: Path, *args: str, python: str | None) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "SGLAUNCH_HOME": str(home), "NO_COLOR": "1"}
    env.pop("SGLAUNCH_SGLANG_PYTHON", None)
    if python:
        env["SGLAUNCH_SGLANG_PYTHON"] = python
    return subprocess.run(
        [sys.executable, "-m", "sglaunch", *args],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
    )


def _save(name: str, validated_with: str) -> None:
    profile = Profile(
        name=name,
        model="example:minicpm-sala",
        # DP attention: rejected for MiniCPM by every release, so nothing launches
        flags={"enable_dp_attention": True, "dp_size": 2, "tp_size": 2},
        validated=Validated(
            sglang_version=validated_with,
            gpu_names=["NVIDIA H100 80GB HBM3"] * 8,
            gpu_count=8,
            at=datetime(2026, 1, 1, tzinfo=UTC),
        ),
    )
    ProfileStore().save(profile)


def test_apply_checks_with_the_installed_release_and_says_what_changed(tmp_path: Path) -> None:
    home = Path(os.environ["SGLAUNCH_HOME"])  # the isolated home of tests/conftest.py
    _save("dp", "0.5.20")
    python = stub_sglang(tmp_path / "s23", "0.5.23")
    res = _apply(
        home, "--profile", "dp", "--apply", "--no-oracle", "--gpu", "H100x8", python=python
    )
    assert res.returncode == 1, res.stderr
    err = res.stderr
    assert err.splitlines()[0].endswith("· for sglang 0.5.23 (installed)")
    assert (
        "! validated with sglang 0.5.20; now checked for sglang 0.5.23; what differs for this launch:"
        in err
    )
    assert "  new in 0.5.23: deprecated-dp-attention (warning)" in err
    assert "MiniCPM does not support DP attention" in err
    assert "Traceback" not in err


def test_apply_without_sglang_checks_for_the_release_the_profile_names(tmp_path: Path) -> None:
    home = Path(os.environ["SGLAUNCH_HOME"])  # the isolated home of tests/conftest.py
    _save("dp", "0.5.20")
    res = _apply(home, "--profile", "dp", "--apply", "--no-oracle", "--gpu", "H100x8", python=None)
    assert res.returncode == 1, res.stderr
    assert res.stderr.splitlines()[0].endswith("· for sglang 0.5.20 (named)")
    assert "what differs" not in res.stderr  # the same release: nothing to compare
    named = _apply(
        home,
        "--profile",
        "dp",
        "--apply",
        "--no-oracle",
        "--gpu",
        "H100x8",
        "--sglang-version",
        "0.5.22",
        python=None,
    )
    assert named.stderr.splitlines()[0].endswith("· for sglang 0.5.22 (named)")
    assert "validated with sglang 0.5.20; now checked for sglang 0.5.22" in named.stderr
