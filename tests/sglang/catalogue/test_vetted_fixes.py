"""Errors only sglang's check finds get their catalogue card and fixes that sglang accepts."""

from __future__ import annotations

import gzip
import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from sglaunch.catalogue import catalogue
from sglaunch.catalogue.vetting import MAX_FIXES, vet_findings
from sglaunch.facts.presets import parse_gpu_spec
from sglaunch.flags.argv import parse_argv, to_argv
from sglaunch.flags.schema import bundled_schema
from sglaunch.oracle import Oracle, oracle_findings
from sglaunch.validators.registry import get_card
from tests.conftest import model_dir

pytestmark = pytest.mark.oracle
ROOT = Path(__file__).resolve().parents[3]
LLAMA = str(ROOT / "sglaunch" / "examples" / "llama-3.1-8b")
DEEPSEEK = str(model_dir("deepseek-v2-lite"))

CASES = [
    # (model, GPU, flags, a flag the card names)
    (
        DEEPSEEK,
        "B200x8",
        ["--attention-backend", "trtllm_mla", "--kv-cache-dtype", "fp8_e5m2"],
        "kv_cache_dtype",
    ),
    (LLAMA, "H100x8", ["--enable-lmcache", "--disable-radix-cache"], "disable_radix_cache"),
    (LLAMA, "H100x8", ["--enable-pdmux"], "enable_pdmux"),
]


@pytest.fixture(scope="module")
def oracle(sglang_python: str) -> Iterator[Oracle]:
    with Oracle(sglang_python, timeout=60.0) as o:
        assert o.status.available, o.status.reason
        yield o


@pytest.mark.parametrize(("model", "gpu", "flags", "names"), CASES)
def test_an_oracle_only_error_gets_fixes_sglang_accepts(
    oracle: Oracle, model: str, gpu: str, flags: list[str], names: str
) -> None:
    facts = parse_gpu_spec(gpu)
    argv = ["--model-path", model, *flags]
    answer = oracle.resolve(argv, {}, facts)
    assert not answer.ok and answer.error is not None
    (finding,) = [f for f in oracle_findings(answer) if f.is_error]
    # no built-in rule or hand-written card has it: the catalogue does, with its flags
    assert get_card(finding.code) is None
    assert catalogue().get(finding.code) is not None
    assert names in finding.flags
    schema = bundled_schema(answer.sglang_version)
    asked: list[list[str]] = []

    def resolve(line):  # type: ignore[no-untyped-def]
        asked.append(list(line))
        return oracle.resolve(list(line), {}, facts)

    (vetted,) = [f for f in vet_findings([finding], argv, schema, resolve) if f.is_error]
    assert 1 <= len(vetted.fixes) <= MAX_FIXES
    assert len(asked) <= 4  # bounded
    parsed = parse_argv(argv, schema).values
    for fix in vetted.fixes:
        fixed = to_argv(fix.apply(parsed), schema)
        assert oracle.resolve(fixed, {}, facts).ok, fix.label


def test_check_shows_the_card_flags_and_vetted_fixes(sglang_python: str) -> None:
    argv = [
        "check",
        "--json",
        "--model",
        LLAMA,
        "--gpu",
        "H100x8",
        "--",
        "--enable-lmcache",
        "--disable-radix-cache",
    ]
    proc = subprocess.run(
        [sys.executable, "-m", "sglaunch", *argv],
        capture_output=True,
        text=True,
        timeout=300,
        env={**__import__("os").environ, "SGLAUNCH_SGLANG_PYTHON": sglang_python},
    )
    assert proc.returncode == 1, proc.stderr
    data = json.loads(proc.stdout)
    (err,) = [f for f in data["findings"] if f["severity"] == "error"]
    assert err["code"] == "sglang-enable-lmcache-requires-radix-cache-to-be"
    assert set(err["flags"]) == {"--enable-lmcache", "--disable-radix-cache"}
    assert {tuple(f["unset"]) for f in err["fixes"]} == {
        ("enable_lmcache",),
        ("disable_radix_cache",),
    }


def test_a_missing_draft_model_names_its_flag(oracle: Oracle) -> None:
    facts = parse_gpu_spec("H100x8")
    argv = ["--model-path", LLAMA, "--speculative-algorithm", "EAGLE"]
    argv += ["--speculative-draft-model-path", "/no/such/draft"]
    answer = oracle.resolve(argv, {}, facts)
    assert answer.error is not None
    schema = bundled_schema(answer.sglang_version)
    (f,) = [
        f
        for f in vet_findings(oracle_findings(answer), argv, schema, lambda _: answer)
        if f.is_error
    ]
    assert f.flags == ("speculative_draft_model_path",)
    assert "no such file or folder" in f.detail


def test_the_bundled_catalogue_is_what_the_installed_source_gives(
    sglang_python: str, tmp_path: Path
) -> None:
    purelib = subprocess.run(
        [sglang_python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    version = subprocess.run(
        [sglang_python, "-c", "from importlib.metadata import version; print(version('sglang'))"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    out = tmp_path / "errors.json"
    subprocess.run(
        [
            sys.executable,
            str(ROOT / "scripts" / "sglang_errors.py"),
            "-o",
            str(out),
            "--src",
            f"{version}={purelib}",
        ],
        check=True,
        capture_output=True,
    )
    fresh = json.loads(out.read_text())["sites"]
    bundled = json.loads(
        gzip.decompress((ROOT / "sglaunch" / "catalogue" / "data" / "errors.json.gz").read_bytes())
    )
    ours = [s for s in bundled["sites"] if version in s["releases"]]
    assert len(fresh) == len(ours) == bundled["counts"][version]
    key = lambda s: (s["file"], s["releases"][version], s["type"], s["segments"])  # noqa: E731
    assert sorted(map(key, fresh)) == sorted(map(key, ours))
