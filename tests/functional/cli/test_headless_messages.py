"""What the headless commands say and how: each a subprocess run, as a script would see it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from sglaunch.profiles import Profile, ProfileStore
from sglaunch.validators.cards import runtime as rc

DP = {"tp_size": 2, "enable_dp_attention": True, "dp_size": 2}


def sglaunch(
    *args: str, home: Path, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "sglaunch", *args],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "SGLAUNCH_HOME": str(home), "NO_COLOR": "1", **(env or {})},
    )


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("SGLAUNCH_HOME", str(tmp_path / "home"))
    return tmp_path / "home"


def test_apply_json_with_errors_prints_one_result_with_the_findings(home: Path) -> None:
    ProfileStore().save(Profile(name="dp", model="example:minicpm-sala", flags=DP))
    res = sglaunch(
        "--profile", "dp", "--apply", "--json", "--no-oracle", "--gpu", "H100x8", home=home
    )
    assert res.returncode == 1
    [line] = res.stdout.splitlines()
    data = json.loads(line)
    assert data["event"] == "checked" and data["ok"] is False and data["profile"] == "dp"
    assert "minicpm-dp-attention" in [f["code"] for f in data["findings"]]


def test_an_empty_profile_file_is_one_line_naming_the_file(home: Path) -> None:
    store = ProfileStore()
    store.save(Profile(name="e", model="example:minicpm-sala"))
    store.path("e").write_bytes(b"")
    res = sglaunch("--profile", "e", "--apply", "--no-oracle", home=home)
    assert res.returncode == 2
    [line] = res.stderr.strip().splitlines()
    assert str(store.path("e")) in line and "is empty" in line


def test_a_missing_secret_is_reported_before_any_finding(home: Path) -> None:
    store = ProfileStore()
    store.save(
        Profile(name="s", model="example:minicpm-sala", flags=DP, secrets={"api_key": "NOPE_KEY"})
    )
    res = sglaunch("--profile", "s", "--apply", "--no-oracle", "--gpu", "H100x8", home=home)
    assert res.returncode == 2
    [line] = res.stderr.strip().splitlines()
    assert "NOPE_KEY" in line and "MiniCPM" not in res.stderr


@pytest.mark.parametrize(
    ("above", "current", "raise_to"),
    [("0.952", "0.9", None), ("0.912", "0.9", 0.95), ("0.71", "0.7", 0.75), ("0.94", "0.9", 0.95)],
)
def test_the_kv_cache_card_never_offers_a_fraction_below_sglangs_minimum(
    above: str, current: str, raise_to: float | None
) -> None:
    message = (
        "ValueError: Loaded weights leave no GPU memory for the KV cache under "
        f"--mem-fraction-static={current}. Raise --mem-fraction-static above {above} "
        "(minimum viable = 1 - available/pre = 0.9). If using speculative decoding, draft "
        "weights are now counted."
    )
    fixes = rc.runtime_fixes(rc.KV_OOM, message, {"tp_size": 1})
    fractions = [f.set["mem_fraction_static"] for f in fixes if "mem_fraction_static" in f.set]
    assert fractions == ([raise_to] if raise_to is not None else [])
    for value in fractions:
        assert value > float(above)
    if raise_to is None:
        assert fixes[0].set == {"tp_size": 2}  # more GPUs come first


def test_wording(home: Path) -> None:
    res = sglaunch(
        "check", "--no-oracle", "--model", "example:minicpm-sala", "--gpu", "FOO", home=home
    )
    assert res.returncode == 2
    assert "unknown GPU 'FOO' in --gpu FOO: the presets are H100," in res.stderr
    res = sglaunch(
        "check", "--no-oracle", "--model", "example:minicpm-sala", "--gpu", "H100x8",
        "--", "--kv-cache-dtype", "fp9",
        home=home,
    )  # fmt: skip
    assert "invalid choice: 'fp9'" in res.stderr and "nvfp4'?" not in res.stderr
    store = ProfileStore()
    for name in ("a", "b"):
        store.save(Profile(name=name, model="example:minicpm-sala"))
    store.delete("a")
    assert sorted(p.name for p in store.root.iterdir() if not p.name.startswith(".")) == [
        "a.toml.bak",
        "b.toml",
    ]
